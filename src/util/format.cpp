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

void write_text_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw RuntimeError("cannot write '" + tmp + "'", "check disk space and permissions");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw RuntimeError("cannot rename '" + tmp + "' to '" + path + "': " + ec.message());
}

}  // namespace ltfit
