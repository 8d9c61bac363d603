#include "model/atomic_file.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace ltfit {

namespace {

namespace fs = std::filesystem;

std::string parent_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

void fsync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // best effort: the rename itself has happened
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

bool WriteError::disk_full() const {
  return error_number_ == ENOSPC || error_number_ == EDQUOT || error_number_ == EFBIG;
}

std::int64_t free_bytes_near(const std::string& path) {
  struct statvfs st {};
  if (::statvfs(path.c_str(), &st) != 0 && ::statvfs(parent_of(path).c_str(), &st) != 0) return -1;
  return std::int64_t(st.f_bavail) * std::int64_t(st.f_frsize);
}

AtomicFileSink::AtomicFileSink(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("cannot create", errno);
}

AtomicFileSink::~AtomicFileSink() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

void AtomicFileSink::fail(const std::string& what, int error_number) {
  const int saved = error_number;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());  // a partial file must not keep a full disk full
  throw WriteError(what + " '" + tmp_ + "': " + std::strerror(saved), saved);
}

void AtomicFileSink::write(std::string_view bytes) {
  if (fd_ < 0) throw WriteError("write to '" + tmp_ + "' after a failure", EBADF);
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), std::min<std::size_t>(bytes.size(), 1u << 30));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot write", n < 0 ? errno : ENOSPC);
    bytes.remove_prefix(std::size_t(n));
  }
}

void AtomicFileSink::commit() {
  if (fd_ < 0) throw WriteError("commit of '" + tmp_ + "' after a failure", EBADF);
  if (::fsync(fd_) != 0) fail("cannot flush", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int e = errno;
    ::unlink(tmp_.c_str());
    throw WriteError("cannot close '" + tmp_ + "': " + std::strerror(e), e);
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp_.c_str());
    throw WriteError("cannot rename '" + tmp_ + "' to '" + path_ + "': " + std::strerror(e), e);
  }
  committed_ = true;
  fsync_directory(parent_of(path_));
}

}  // namespace ltfit
