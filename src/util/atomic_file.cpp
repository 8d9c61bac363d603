#include "ltfit/util/atomic_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <sys/stat.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "ltfit/util/temp_files.h"

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

// `<dir>/.<name>.XXXXXX.tmp`, XXXXXX six random letters and digits: hidden (no reader indexes a
// half-written image) and, created exclusively, unique.
std::string temp_name(const std::string& path) {
  static constexpr char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device random;  // getrandom(2)
  std::uint64_t bits = (std::uint64_t{random()} << 32) | random();
  std::string letters(6, '0');
  for (char& c : letters) {
    c = kChars[bits % (sizeof kChars - 1)];
    bits /= sizeof kChars - 1;
  }
  const fs::path p(path);
  return (p.parent_path() / ("." + p.filename().string() + "." + letters + ".tmp")).string();
}

// Tests only (LTFIT_TEST_HOLD_TEMP_FILE_MS): how long commit() waits before flushing, so that a
// test can signal or kill the process while a temporary file exists.
int test_hold_ms() {
  static const int ms = [] {
    const char* text = std::getenv("LTFIT_TEST_HOLD_TEMP_FILE_MS");
    return text == nullptr ? 0 : std::max(0, std::atoi(text));
  }();
  return ms;
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

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  for (int attempt = 0; fd_ < 0; ++attempt) {
    tmp_ = temp_name(path_);
    // Registered before it exists: a stop signal that ends the process at any moment after the
    // file is created removes it (signals.h).
    live_slot_ = register_live_temp_file(tmp_);
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ >= 0) break;
    const int e = errno;
    unregister_live_temp_file(live_slot_);
    live_slot_ = -1;
    if (e == EEXIST && attempt < 100) continue;  // another writer's name: draw again
    tmp_ = path_ + ".tmp";                       // for the message: no file was created
    throw WriteError("cannot create a file next to '" + path_ + "': " + std::strerror(e), e,
                     "check that the folder exists and is writable");
  }
  ::flock(fd_, LOCK_EX | LOCK_NB);  // held until closed: the file is not stale (temp_files.h)
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
  unregister_live_temp_file(live_slot_);
}

void AtomicFile::fail(const std::string& what, int error_number) {
  const int saved = error_number;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());  // a partial file must not keep a full disk full
  throw WriteError(what + " '" + tmp_ + "' (for '" + path_ + "'): " + std::strerror(saved), saved,
                   saved == ENOSPC || saved == EDQUOT || saved == EFBIG
                       ? "free disk space and run again; the previous '" + path_ + "' is kept"
                       : "check that the folder is writable");
}

void AtomicFile::write(std::string_view bytes) {
  if (fd_ < 0) throw WriteError("write to '" + tmp_ + "' after a failure", EBADF);
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), std::min<std::size_t>(bytes.size(), 1u << 30));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot write", n < 0 ? errno : ENOSPC);
    bytes.remove_prefix(std::size_t(n));
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw WriteError("commit of '" + tmp_ + "' after a failure", EBADF);
  if (test_hold_ms() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(test_hold_ms()));
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
  unregister_live_temp_file(live_slot_);
  live_slot_ = -1;
  fsync_directory(parent_of(path_));
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  AtomicFile file(path);
  file.write(bytes);
  file.commit();
}

void write_text_atomic(const std::string& path, const std::string& text) {
  write_file_atomic(path, text);
}

}  // namespace ltfit
