// A leading `~` expanded: see home_path.h.
#include "ltfit/util/home_path.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

namespace ltfit {

namespace {

// The home folder of `user` ("": this process's user), or "" when unknown.
std::string home_of(const std::string& user) {
  if (user.empty()) {
    const char* home = std::getenv("HOME");
    if (home != nullptr && home[0] != '\0') return home;
  }
  long size = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buffer(static_cast<std::size_t>(size > 0 ? size : 16384));
  struct passwd entry {};
  struct passwd* found = nullptr;
  const int status = user.empty()
                         ? ::getpwuid_r(::getuid(), &entry, buffer.data(), buffer.size(), &found)
                         : ::getpwnam_r(user.c_str(), &entry, buffer.data(), buffer.size(), &found);
  if (status != 0 || found == nullptr || found->pw_dir == nullptr) return "";
  return found->pw_dir;
}

}  // namespace

std::string expand_home(std::string_view path) {
  if (path.empty() || path[0] != '~') return std::string(path);
  const std::size_t slash = path.find('/');
  const std::string user(path.substr(1, slash == std::string_view::npos ? path.npos : slash - 1));
  const std::string home = home_of(user);
  if (home.empty()) return std::string(path);
  return slash == std::string_view::npos ? home : home + std::string(path.substr(slash));
}

}  // namespace ltfit
