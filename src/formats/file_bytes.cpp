// A file's bytes, read whole (file_bytes.h).
#include "ltfit/formats/file_bytes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace ltfit {

std::shared_ptr<const std::string> read_regular_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    throw std::runtime_error(e == ENOENT ? "does not exist" : std::strerror(e));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw std::runtime_error("is not a regular file");
  }
  auto bytes = std::make_shared<std::string>(std::size_t(st.st_size), '\0');
  std::size_t done = 0;
  while (done < bytes->size()) {
    const ssize_t n = ::read(fd, bytes->data() + done, bytes->size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      throw std::runtime_error(std::string("cannot be read: ") + std::strerror(e));
    }
    if (n == 0) break;  // shrank while being read: what is there is checked like any other
    done += std::size_t(n);
  }
  ::close(fd);
  bytes->resize(done);
  return bytes;
}

}  // namespace ltfit
