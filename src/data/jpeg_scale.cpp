// Choosing a JPEG's M/8 decode scale; see jpeg_decode.h. Compiled with or without libjpeg-turbo
// (OpenCV's reduced decodes are the powers of two this chooses today).
#include <algorithm>
#include <cstdint>

#include "data/jpeg_decode.h"

namespace ltfit {
namespace {

// The cost of a pixel decoded at an M/8 without SIMD code, against one with (see jpeg_eighths).
constexpr double kScalarIdctCost = 4.0;

}  // namespace

int jpeg_eighths(std::uint64_t width, std::uint64_t height, double min_short_side) {
  if (!(min_short_side > 0)) return 8;
  const auto cost = [&](int m) {
    const bool simd = m == 1 || m == 2 || m == 4 || m == 8;
    return static_cast<double>(jpeg_scaled_side(width, m)) *
           static_cast<double>(jpeg_scaled_side(height, m)) * (simd ? 1.0 : kScalarIdctCost);
  };
  const std::uint64_t short_side = std::min(width, height);
  int best = 8;
  for (int m = 7; m >= 1; --m) {
    if (static_cast<double>(jpeg_scaled_side(short_side, m)) < min_short_side) break;
    if (cost(m) < cost(best)) best = m;
  }
  return best;
}

std::uint64_t jpeg_scaled_side(std::uint64_t side, int eighths) {
  const auto m = static_cast<std::uint64_t>(std::clamp(eighths, 1, 8));
  return (side * m + 7) / 8;
}

}  // namespace ltfit
