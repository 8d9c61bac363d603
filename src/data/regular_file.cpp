// Opening and reading a regular file, retrying the system's failures (regular_file.h).
#include "data/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "data/system_io.h"

namespace ltfit {
namespace {

std::string errno_text(int error) { return std::generic_category().message(error); }

// Why a path that is not a regular file cannot be an image, without opening it.
std::string not_a_file_reason(const std::string& path, const struct stat& st) {
  if (S_ISDIR(st.st_mode)) return "is a directory, not an image";
  if (S_ISFIFO(st.st_mode)) return "is a FIFO (named pipe), not an image file; not opened";
  if (S_ISSOCK(st.st_mode)) return "is a socket, not an image file; not opened";
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    return "is a device, not an image file; not opened";
  }
  return "is not a regular file; not opened";
}

}  // namespace

FileHandle::~FileHandle() {
  if (fd_ >= 0) ::close(fd_);
}

int open_regular_file(const std::string& path, std::uint64_t* size, std::string* error) {
  struct stat st {};
  if (call_with_retries("stat", path,
                        [&] { return static_cast<long>(::stat(path.c_str(), &st)); }) != 0) {
    const int stat_errno = errno;
    struct stat link {};
    std::error_code ec;
    if (stat_errno == ENOENT && ::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
      *error =
          "dangling symbolic link (to '" + std::filesystem::read_symlink(path, ec).string() + "')";
    } else if (stat_errno == ENOENT) {
      *error = "file not found";
    } else {
      *error = "cannot stat: " + errno_text(stat_errno);
    }
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = not_a_file_reason(path, st);
    return -1;
  }
  // O_NONBLOCK: should the path have become a FIFO since stat, open must not wait for a writer.
  const int fd = static_cast<int>(call_with_retries("open", path, [&] {
    return static_cast<long>(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  }));
  if (fd < 0) {
    *error = "cannot open: " + errno_text(errno);
    return -1;
  }
  FileHandle owned(fd);  // closed on every way out but success, a SystemIoError's included
  if (call_with_retries("stat", path, [&] { return static_cast<long>(::fstat(fd, &st)); }) != 0 ||
      !S_ISREG(st.st_mode)) {
    *error = "is not a regular file; not read";
    return -1;
  }
  *size = static_cast<std::uint64_t>(st.st_size);
  return owned.release();
}

std::size_t read_at(int fd, const std::string& path, std::uint64_t offset, std::size_t size,
                    std::uint8_t* out) {
  std::size_t done = 0;
  while (done < size) {
    const long n = call_with_retries("read", path, [&] {
      return static_cast<long>(
          ::pread(fd, out + done, size - done, static_cast<off_t>(offset + done)));
    });
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  return done;
}

}  // namespace ltfit
