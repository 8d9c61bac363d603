// The decoded-image cache of data.cache: ram; what it keeps and why: ltfit/data/decode_cache.h.
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

// The scale an image was decoded at, and the file's size, which a later request's scale is
// chosen from.
struct DecodeScale {
  int eighths = 8;  // M/8 (8: full size; always 8 but for JPEG)
  bool jpeg = false;
  std::uint64_t file_width = 0, file_height = 0;  // the image's size in the file (its header)
};

// Private to src/data; the rest of ltfit makes one with make_decoded_image_cache and reads its
// figures with decoded_image_cache_stats (include/ltfit/data/decode_cache.h).
class DecodedImageCache {
 public:
  // One decoded image: its pixels (CV_8UC3, never written to) and their scale.
  struct Entry {
    cv::Mat image;
    DecodeScale scale;
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
