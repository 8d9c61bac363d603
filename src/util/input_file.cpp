// Bounded reads of command-line input files; see input_file.h.
#include "ltfit/util/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ltfit/util/error.h"

namespace ltfit {
namespace {

// Closes the descriptor on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

std::string read_input_file(const std::string& path, const std::string& what,
                            std::size_t max_bytes) {
  const std::string name = what + " '" + path + "'";
  Fd file{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (file.fd < 0) {
    const int error = errno;
    if (error == ENOENT) {
      throw ConfigError(name + " does not exist", "check the path");
    }
    throw ConfigError("cannot open " + name + ": " + std::strerror(error),
                      "check the path and its permissions");
  }
  struct stat info {};
  if (::fstat(file.fd, &info) != 0) {
    throw ConfigError("cannot stat " + name + ": " + std::strerror(errno));
  }
  if (!S_ISREG(info.st_mode)) {
    throw ConfigError(name + " is " + file_kind(info.st_mode) + ", not a regular file",
                      "give the path of a YAML file");
  }
  if (static_cast<std::size_t>(info.st_size) > max_bytes) {
    throw ConfigError(name + " is " + std::to_string(info.st_size) + " bytes; at most " +
                          std::to_string(max_bytes) + " are read",
                      "is this the right file? configs and plans are a few KB");
  }
  std::string text;
  text.reserve(static_cast<std::size_t>(info.st_size));
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(file.fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ConfigError("cannot read " + name + ": " + std::strerror(errno));
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > max_bytes) {
      throw ConfigError(name + " grew past " + std::to_string(max_bytes) + " bytes while read");
    }
  }
  return text;
}

}  // namespace ltfit
