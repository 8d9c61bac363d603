#include "ltfit/util/read_limits.h"

#include <cstdio>
#include <cstdlib>

namespace ltfit {

namespace {

// LTFIT_READ_LIMIT_MIB=N replaces the fixed 64 MiB part of the limit (for a file you trust that
// is unusually dense, e.g. a state dict of millions of tiny tensors); other values are ignored.
std::uint64_t fixed_limit_bytes(std::uint64_t fallback) {
  const char* text = std::getenv("LTFIT_READ_LIMIT_MIB");
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long mib = std::strtoull(text, &end, 10);
  if (*end != '\0' || mib == 0 || mib > (1ull << 24)) return fallback;  // up to 16 TiB
  return std::uint64_t(mib) << 20;
}

}  // namespace

ReadLimits default_read_limits(std::uint64_t file_bytes) {
  ReadLimits limits;
  limits.max_bytes = fixed_limit_bytes(limits.max_bytes);
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
                   "and 32 bytes per byte of its pickle; for a file you trust, raise the 64 MiB "
                   "with LTFIT_READ_LIMIT_MIB=N)");
}

}  // namespace ltfit
