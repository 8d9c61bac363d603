// How much a file may make ltfit's readers allocate (zip, pickle, torch.save archives).
//
// A file is read into memory once; everything a reader allocates beyond those bytes (inflated
// records, unpickled objects, tensor views, copies of unaligned storages) is charged to one
// ReadBudget, which throws LimitError the moment the file would take more than its limit. The
// limit is relative to the file's own size: a fixed 64 MiB, twice the file's size, and 32 bytes
// per byte that the pickle (data.pkl) takes in the file, so that a small crafted file cannot
// take gigabytes (a deflated pickle earns its objects by its compressed size, not by what it
// inflates to), while honest state dicts and checkpoints (pickles cost ~25 bytes of objects per
// byte) fit with a margin. Not thread-safe (one budget per read).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ltfit {

// A reader met a file that would take more than its limits.
class LimitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ReadLimits {
  std::uint64_t max_bytes = 64ull << 20;  // bytes the readers may allocate besides the file's own
  std::uint64_t pickle_factor = 32;       // plus this many per byte data.pkl takes in the file
  int max_depth = 32;                     // nesting of tensor rebuild calls in a pickle
};

// The default: max_bytes is 64 MiB plus twice the file's size.
ReadLimits default_read_limits(std::uint64_t file_bytes);

class ReadBudget {
 public:
  explicit ReadBudget(std::uint64_t max_bytes) : max_bytes_(max_bytes) {}
  // Counts `bytes` about to be allocated for `what`; throws LimitError past the limit.
  void charge(std::uint64_t bytes, const char* what) {
    if (bytes > max_bytes_ - used_) throw_exceeded(bytes, what);
    used_ += bytes;
  }
  // Raises the limit by `bytes` (saturating).
  void allow_more(std::uint64_t bytes) {
    max_bytes_ = bytes > UINT64_MAX - max_bytes_ ? UINT64_MAX : max_bytes_ + bytes;
  }
  std::uint64_t used() const { return used_; }
  std::uint64_t left() const { return max_bytes_ - used_; }
  std::uint64_t max_bytes() const { return max_bytes_; }

 private:
  [[noreturn]] void throw_exceeded(std::uint64_t bytes, const char* what) const;
  std::uint64_t max_bytes_;
  std::uint64_t used_ = 0;
};

}  // namespace ltfit
