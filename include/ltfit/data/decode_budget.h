// A bound on the memory image decoding holds at once, shared by every decoding thread: a
// first-come-first-served counting semaphore of bytes.
//
// Each decode estimates its peak from the file's header (file bytes + the decoder's buffers +
// the 8-bit image and one copy of it) and holds that many bytes of the budget while it runs, so
// N loader threads cannot each hold a maximum-size image at once: whatever data.workers is, the
// decoders together hold at most the budget — except that a single image larger than the whole
// budget still decodes, alone, once everything else has finished. Requests are served in arrival
// order, so a large one is not starved by a stream of small ones. Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace ltfit {

// What the loaders of one process share unless given their own budget (2 GiB: two images at
// the default data.max_pixels, decoded from progressive JPEGs, or hundreds of ordinary photos).
inline constexpr std::uint64_t kDefaultDecodeBudgetBytes = 2ULL << 30;

class DecodeBudget {
 public:
  // Bytes of the budget held by one decode; returned when destroyed. Move-only.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();
    std::uint64_t bytes() const { return bytes_; }

   private:
    friend class DecodeBudget;
    Lease(DecodeBudget* budget, std::uint64_t bytes) : budget_(budget), bytes_(bytes) {}
    DecodeBudget* budget_ = nullptr;
    std::uint64_t bytes_ = 0;
  };

  explicit DecodeBudget(std::uint64_t capacity_bytes);
  DecodeBudget(const DecodeBudget&) = delete;
  DecodeBudget& operator=(const DecodeBudget&) = delete;

  // Blocks until `bytes` fit beside what is held, or nothing is held. Never fails.
  Lease acquire(std::uint64_t bytes);

  std::uint64_t capacity() const { return capacity_; }
  std::uint64_t in_use() const;
  std::uint64_t peak() const;  // the most held at once since construction

 private:
  void release(std::uint64_t bytes);

  const std::uint64_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::uint64_t in_use_ = 0;
  std::uint64_t peak_ = 0;
  std::uint64_t next_ticket_ = 0;  // arrival order
  std::uint64_t serving_ = 0;      // the ticket allowed to take bytes next
};

// The process-wide budget (kDefaultDecodeBudgetBytes) every loader uses by default.
DecodeBudget& default_decode_budget();

}  // namespace ltfit
