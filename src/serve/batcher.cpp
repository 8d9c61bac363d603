// Dynamic batching for `ltfit serve` (batcher.h).
#include "ltfit/serve/batcher.h"

#include <torch/torch.h>

#include <utility>

namespace ltfit {

Batcher::Batcher(Run run, int max_batch, std::chrono::milliseconds max_wait, std::size_t queue)
    : run_(std::move(run)),
      max_batch_(std::max(1, max_batch)),
      max_wait_(max_wait),
      capacity_(std::max<std::size_t>(1, queue)) {
  stats_.batch_sizes.assign(static_cast<std::size_t>(max_batch_) + 1, 0);
  worker_ = std::thread([this] { work(); });
}

Batcher::~Batcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  ready_.notify_all();
  worker_.join();
}

Batcher::Coming::Coming(Batcher* batcher, std::int64_t images)
    : batcher_(batcher), images_(images) {
  std::lock_guard<std::mutex> lock(batcher_->mutex_);
  batcher_->coming_ += images_;
}

Batcher::Coming::Coming(Coming&& other) noexcept
    : batcher_(std::exchange(other.batcher_, nullptr)), images_(other.images_) {}

Batcher::Coming::~Coming() {
  if (batcher_ == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(batcher_->mutex_);
    batcher_->coming_ -= images_;
  }
  batcher_->ready_.notify_all();
}

Batcher::Coming Batcher::expect(std::int64_t images) { return Coming(this, images); }

std::optional<std::future<Batcher::Result>> Batcher::submit(
    torch::Tensor image, bool tta, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (queue_.size() >= capacity_ || closing_) {
    ++stats_.refused;
    return std::nullopt;
  }
  Item item{std::move(image), {}, std::chrono::steady_clock::now(), tta, deadline};
  std::future<Result> result = item.promise.get_future();
  queue_.push_back(std::move(item));
  lock.unlock();
  ready_.notify_all();
  return result;
}

Batcher::Stats Batcher::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Stats s = stats_;
  s.queued = static_cast<std::int64_t>(queue_.size());
  return s;
}

std::vector<Batcher::Item> Batcher::next_batch() {
  std::vector<Item> batch;
  std::unique_lock<std::mutex> lock(mutex_);
  while (batch.empty()) {
    ready_.wait(lock, [&] { return closing_ || !queue_.empty(); });
    if (queue_.empty()) return batch;  // closing, nothing left
    // Wait for a full batch while more images are on their way, until the first image has
    // waited max_wait; waiting when none is coming would only add latency.
    const auto until = queue_.front().arrived + max_wait_;
    ready_.wait_until(lock, until, [&] {
      return closing_ || coming_ <= 0 || queue_.size() >= static_cast<std::size_t>(max_batch_);
    });
    const auto now = std::chrono::steady_clock::now();
    while (!queue_.empty() && batch.size() < static_cast<std::size_t>(max_batch_)) {
      Item item = std::move(queue_.front());
      queue_.pop_front();
      if (item.deadline <= now) {  // its request has answered already: not worth the model's time
        item.promise.set_value({{}, {}, std::string("expired")});
        ++stats_.expired;
        continue;
      }
      batch.push_back(std::move(item));
    }
  }
  return batch;
}

void Batcher::work() {
  torch::NoGradGuard no_grad;
  while (true) {
    std::vector<Item> batch = next_batch();
    if (batch.empty()) return;
    std::vector<torch::Tensor> images;
    std::vector<char> tta;
    for (const Item& item : batch) {
      images.push_back(item.image);
      tta.push_back(item.tta ? 1 : 0);
    }
    const auto started = std::chrono::steady_clock::now();
    try {
      const auto [probabilities, logits] = run_(torch::stack(images), tta);
      for (std::size_t i = 0; i < batch.size(); ++i) {
        const auto row = static_cast<std::int64_t>(i);
        batch[i].promise.set_value({probabilities[row].clone(), logits[row].clone(), std::nullopt});
      }
    } catch (const std::exception& e) {
      for (Item& item : batch) item.promise.set_value({{}, {}, std::string(e.what())});
    }
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.run_seconds += took.count();
    stats_.images += static_cast<std::int64_t>(batch.size());
    ++stats_.batches;
    ++stats_.batch_sizes[batch.size()];
  }
}

}  // namespace ltfit
