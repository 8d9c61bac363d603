// The decoded-image cache of data.cache: ram (what it keeps and why: ltfit/data/decode_cache.h).
// // What is kept is the decoder's output, the whole image at the scale the decode chose (a JPEG
// at 1/2, 1/4 or 1/8 when that still covers the output), before any crop or augmentation: from
// the second epoch on an image is only warped afresh, not read and decoded again. A hit needs the
// same scale the decode would choose now (progressive resizing or another split asking for
// more pixels decodes again and replaces the entry), so a batch is the same with or without the
// cache. Bounded by data.cache_bytes: once full, further images are decoded each time as
// without the cache (nothing is evicted: an epoch visits every image in a new random order,
// where evicting the oldest would keep nothing that is used again). Counts hits, misses and
// bytes for the run's report. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include <opencv2/core.hpp>

#include "ltfit/data/decode_cache.h"

namespace ltfit {

// Private to src/data; the rest of ltfit makes one with make_decoded_image_cache and reads its
// figures with decoded_image_cache_stats (include/ltfit/data/decode_cache.h).
class DecodedImageCache {
 public:
  // One decoded image: its pixels (CV_8UC3, never written to), the M/8 scale they were decoded
  // at (8 for formats other than JPEG) and the file's full size, from its header.
  struct Entry {
    cv::Mat image;
    int eighths = 8;
    bool jpeg = false;
    std::uint64_t width = 0, height = 0;
  };

  using Stats = DecodedImageCacheStats;

  explicit DecodedImageCache(std::uint64_t capacity_bytes);

  // The entry of `key` (a file's path), counted as a hit or a miss by `usable`, which says
  // whether an entry found serves the request.
  template <typename Usable>
  std::optional<Entry> find(const std::string& key, Usable&& usable) {
    std::optional<Entry> found = lookup(key);
    const bool hit = found && usable(*found);
    (hit ? hits_ : misses_).fetch_add(1, std::memory_order_relaxed);
    if (!hit) found.reset();
    return found;
  }

  // Keeps `entry` under `key` (replacing an entry of another scale) if it fits within the
  // capacity; false when it does not.
  bool insert(const std::string& key, Entry entry);

  Stats stats() const;

 private:
  std::optional<Entry> lookup(const std::string& key) const;

  const std::uint64_t capacity_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
  std::uint64_t bytes_ = 0;
  std::uint64_t not_kept_ = 0;
  std::atomic<std::uint64_t> hits_{0}, misses_{0};
};

}  // namespace ltfit
