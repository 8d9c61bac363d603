// The shared decode memory budget; see decode_budget.h.
#include "ltfit/data/decode_budget.h"

#include <algorithm>
#include <utility>

namespace ltfit {

DecodeBudget::Lease::Lease(Lease&& other) noexcept
    : budget_(std::exchange(other.budget_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DecodeBudget::Lease& DecodeBudget::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    if (budget_ != nullptr) budget_->release(bytes_);
    budget_ = std::exchange(other.budget_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DecodeBudget::Lease::~Lease() {
  if (budget_ != nullptr) budget_->release(bytes_);
}

DecodeBudget::DecodeBudget(std::uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

DecodeBudget::Lease DecodeBudget::acquire(std::uint64_t bytes) {
  std::unique_lock lock(mutex_);
  const std::uint64_t ticket = next_ticket_++;
  changed_.wait(lock, [&] {
    return ticket == serving_ &&
           (in_use_ == 0 || bytes <= capacity_ - std::min(capacity_, in_use_));
  });
  in_use_ += bytes;
  peak_ = std::max(peak_, in_use_);
  ++serving_;
  lock.unlock();
  changed_.notify_all();  // the next in line may fit too
  return Lease(this, bytes);
}

void DecodeBudget::release(std::uint64_t bytes) {
  {
    std::lock_guard lock(mutex_);
    in_use_ -= bytes;
  }
  changed_.notify_all();
}

std::uint64_t DecodeBudget::in_use() const {
  std::lock_guard lock(mutex_);
  return in_use_;
}

std::uint64_t DecodeBudget::peak() const {
  std::lock_guard lock(mutex_);
  return peak_;
}

DecodeBudget& default_decode_budget() {
  static DecodeBudget budget(kDefaultDecodeBudgetBytes);
  return budget;
}

}  // namespace ltfit
