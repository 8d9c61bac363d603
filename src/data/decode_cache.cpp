// The decoded-image cache; see decode_cache.h.
#include "data/decode_cache.h"

namespace ltfit {
namespace {

std::uint64_t bytes_of(const cv::Mat& image) {
  return static_cast<std::uint64_t>(image.total()) * image.elemSize();
}

}  // namespace

DecodedImageCache::DecodedImageCache(std::uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

std::optional<DecodedImageCache::Entry> DecodedImageCache::lookup(const std::string& key) const {
  std::lock_guard lock(mutex_);
  const auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;  // shares the pixels (cv::Mat counts references)
}

bool DecodedImageCache::insert(const std::string& key, Entry entry) {
  // A view into a larger buffer would hold more than it counts: keep a compact copy.
  if (!entry.image.isContinuous() || entry.image.u == nullptr ||
      entry.image.u->size != bytes_of(entry.image)) {
    entry.image = entry.image.clone();
  }
  const std::uint64_t size = bytes_of(entry.image);
  std::lock_guard lock(mutex_);
  const auto it = entries_.find(key);
  const std::uint64_t replaced = it == entries_.end() ? 0 : bytes_of(it->second.image);
  if (bytes_ - replaced + size > capacity_) {
    ++not_kept_;
    return false;
  }
  bytes_ = bytes_ - replaced + size;
  entries_[key] = std::move(entry);
  return true;
}

DecodedImageCache::Stats DecodedImageCache::stats() const {
  std::lock_guard lock(mutex_);
  return {hits_.load(std::memory_order_relaxed),
          misses_.load(std::memory_order_relaxed),
          static_cast<std::uint64_t>(entries_.size()),
          bytes_,
          capacity_,
          not_kept_};
}

std::shared_ptr<DecodedImageCache> make_decoded_image_cache(std::uint64_t capacity_bytes) {
  return std::make_shared<DecodedImageCache>(capacity_bytes);
}

DecodedImageCacheStats decoded_image_cache_stats(const DecodedImageCache& cache) {
  return cache.stats();
}

}  // namespace ltfit
