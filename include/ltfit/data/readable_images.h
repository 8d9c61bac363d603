// Which images of a sample list the loader can read, as far as each file's own bytes tell
// without decoding it: a regular, non-empty file whose header passes data.max_pixels and
// data.formats (and, for a JPEG, whose end shows no truncation). A training loader plans its
// epochs over the readable images only, so unreadable files neither count as batches nor make
// the readable ones repeat (each readable image is seen once an epoch). The answer depends on
// the files alone: every rank of a data-parallel run, and a resumed run, finds the same.
// Thread-safe (pure functions; check_readable runs its own threads and joins them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ltfit/data/dataset_index.h"
#include "ltfit/data/image_header.h"

namespace ltfit {

struct UnreadableImage {
  std::int64_t position = 0;  // index in the sample list
  std::string reason;         // "empty file (0 bytes)", "not a decodable image (...)", ...
};

struct ReadableImages {
  std::vector<std::int64_t> readable;       // positions that pass, ascending
  std::vector<UnreadableImage> unreadable;  // positions that fail, ascending
};

// Checks every sample's file (header and tail reads only) on `threads` threads (at least one:
// the caller's). Rethrows on the caller's thread anything a check threw (resource exhaustion).
ReadableImages check_readable(const std::vector<Sample>& samples, const ImageLimits& limits,
                              int threads);

// The first sample that passes the check, or -1 when none does (stops at the first).
std::int64_t first_readable(const std::vector<Sample>& samples, const ImageLimits& limits);

}  // namespace ltfit
