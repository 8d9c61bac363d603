// The shipped configs written out of the binary: see shipped_configs.h.
#include "ltfit/jobs/shipped_configs.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <system_error>

#include "ltfit/util/home_path.h"
#include "ltfit/util/sha256.h"

namespace ltfit {

namespace fs = std::filesystem;

namespace {

fs::path cache_root() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return fs::path(xdg) / "ltfit";
  return fs::path(expand_home("~/.cache")) / "ltfit";
}

std::string content_hash() {
  std::string all;
  for (const EmbeddedFile& f : shipped_config_files()) {
    all += f.path;
    all.push_back('\0');
    all += f.text;
    all.push_back('\0');
  }
  return sha256_hex(all).substr(0, 16);
}

// Writes every file into `dir` (made here); false on any failure.
bool write_all(const fs::path& dir) {
  std::error_code error;
  for (const EmbeddedFile& f : shipped_config_files()) {
    const fs::path path = dir / f.path;
    fs::create_directories(path.parent_path(), error);
    if (error) return false;
    std::ofstream out(path, std::ios::binary);
    out << f.text;
    out.close();
    if (!out) return false;
  }
  return true;
}

fs::path make_dir() {
  const fs::path final_dir = cache_root() / ("configs-" + content_hash());
  std::error_code error;
  if (fs::is_directory(final_dir, error)) return final_dir;
  const fs::path staging =
      cache_root() / (".configs-" + std::to_string(::getpid()) + "-" + content_hash() + ".tmp");
  fs::remove_all(staging, error);
  if (!fs::create_directories(staging, error) || !write_all(staging)) {
    fs::remove_all(staging, error);
    spdlog::warn(
        "cannot write the shipped configs into {}: names such as 'cats_dogs' are found "
        "only in ./configs and the installed share/ltfit/configs",
        cache_root().string());
    return {};
  }
  fs::rename(staging, final_dir, error);  // another process may have won the race: same files
  if (error) fs::remove_all(staging, error);
  return fs::is_directory(final_dir, error) ? final_dir : fs::path();
}

}  // namespace

fs::path shipped_config_dir() {
  static const fs::path dir = make_dir();
  return dir;
}

}  // namespace ltfit
