// Opening and reading a regular file whatever the system does meanwhile (private to src/data),
// for the image decoder (decode.cpp) and the readers of record files (layout_cifar.cpp). Only a
// regular file is opened: a FIFO, socket, device, directory or dangling link is refused by its
// type, never opened, so nothing blocks. Opens, stats and reads go through call_with_retries
// (system_io.h): a passing shortage of descriptors or memory is waited out, a lasting one throws
// SystemIoError naming the file. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace ltfit {

// A file descriptor, closed on destruction.
class FileHandle {
 public:
  explicit FileHandle(int fd) : fd_(fd) {}
  ~FileHandle();
  FileHandle(FileHandle&& other) noexcept : fd_(other.release()) {}
  FileHandle(const FileHandle&) = delete;
  FileHandle& operator=(const FileHandle&) = delete;
  FileHandle& operator=(FileHandle&&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Opens `path` for reading if, and only if, it is a regular file, and sets `size`; else returns
// -1 with `error` saying why ("file not found", "dangling symbolic link (to '...')", "is a FIFO
// ...", "cannot open: Permission denied").
int open_regular_file(const std::string& path, std::uint64_t* size, std::string* error);

// pread of `path`'s `fd` until `size` bytes are read or the file ends; returns the bytes read.
// SystemIoError when the system keeps failing the read (EIO, ENOMEM: system_io.h).
std::size_t read_at(int fd, const std::string& path, std::uint64_t offset, std::size_t size,
                    std::uint8_t* out);

}  // namespace ltfit
