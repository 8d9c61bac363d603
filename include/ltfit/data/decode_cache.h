// data.cache: ram — decoded images kept in memory across epochs, shared by the loader threads.
//
// What is kept is the decoder's output, the whole image at the scale the decode chose (a JPEG
// at 1/2, 1/4 or 1/8 when that still covers the output), before any crop or augmentation: from
// the second epoch on an image is only warped afresh, not read and decoded again. A hit needs the
// same scale the decode would choose now (progressive resizing or another split asking for more
// pixels decodes again and replaces the entry), so a batch is the same with or without the
// cache. Bounded by data.cache_bytes: once full, further images are decoded each time as without
// the cache (nothing is evicted: an epoch visits every image in a new random order, where
// evicting the oldest would keep nothing that is used again). Counts hits, misses and bytes for
// the run's report. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>

namespace ltfit {

class DecodedImageCache;  // src/data/decode_cache.h

struct DecodedImageCacheStats {
  std::uint64_t hits = 0, misses = 0;   // lookups that found a usable entry, and those that did not
  std::uint64_t images = 0, bytes = 0;  // what is held
  std::uint64_t capacity = 0;           // data.cache_bytes
  std::uint64_t not_kept = 0;           // decodes not kept because the cache was full
};

// A cache of at most `capacity_bytes` of decoded pixels, for the loaders of one run to share.
std::shared_ptr<DecodedImageCache> make_decoded_image_cache(std::uint64_t capacity_bytes);

DecodedImageCacheStats decoded_image_cache_stats(const DecodedImageCache& cache);

}  // namespace ltfit
