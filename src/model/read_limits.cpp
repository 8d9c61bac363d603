#include "ltfit/model/read_limits.h"

#include <cstdio>

namespace ltfit {

ReadLimits default_read_limits(std::uint64_t file_bytes) {
  ReadLimits limits;
  const std::uint64_t twice = file_bytes > (UINT64_MAX >> 2) ? UINT64_MAX >> 1 : 2 * file_bytes;
  limits.max_bytes += twice;
  return limits;
}

void ReadBudget::throw_exceeded(std::uint64_t bytes, const char* what) const {
  constexpr double kMiB = 1024.0 * 1024.0;
  char text[96];
  std::snprintf(text, sizeof text, "%.1f MiB", double(max_bytes_) / kMiB);
  throw LimitError(std::string("reading it would take more than ") + text +
                   " of memory besides the file itself (" + what + ": " + std::to_string(bytes) +
                   " more bytes after " + std::to_string(used_) +
                   "): the file is corrupt or crafted (the limit: 64 MiB, twice the file's size, "
                   "and 32 bytes per byte of its pickle)");
}

}  // namespace ltfit
