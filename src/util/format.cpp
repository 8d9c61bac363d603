#include "ltfit/util/format.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "ltfit/util/error.h"

namespace ltfit {

std::string format_mm_ss(double seconds) {
  const long total = std::lround(std::max(seconds, 0.0));
  char text[32];
  if (total >= 3600) {
    std::snprintf(text, sizeof text, "%ld:%02ld:%02ld", total / 3600, (total / 60) % 60,
                  total % 60);
  } else {
    std::snprintf(text, sizeof text, "%02ld:%02ld", total / 60, total % 60);
  }
  return text;
}

}  // namespace ltfit
