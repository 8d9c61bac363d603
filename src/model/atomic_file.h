// Writing a file so that a failure never leaves a partial file or destroys the previous one.
//
// Private to src/model. AtomicFileSink writes through a plain file descriptor to `<path>.tmp`,
// checking every write (EINTR retried); commit() fsyncs it, renames it over `path` and fsyncs
// the directory. If commit() is never reached (an exception, a full disk), the destructor
// closes and removes the temporary file and never throws. A failure throws WriteError, which
// keeps errno so that callers can tell a full disk (ENOSPC, EDQUOT, EFBIG) from the rest.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "model/zip_archive.h"

namespace ltfit {

class WriteError : public std::runtime_error {
 public:
  WriteError(const std::string& message, int error_number)
      : std::runtime_error(message), error_number_(error_number) {}
  int error_number() const { return error_number_; }
  // ENOSPC, EDQUOT or EFBIG (the file-size limit, ulimit -f): the same for the user.
  bool disk_full() const;

 private:
  int error_number_;
};

class AtomicFileSink : public zip::ByteSink {
 public:
  explicit AtomicFileSink(std::string path);  // creates `<path>.tmp`
  ~AtomicFileSink() override;
  AtomicFileSink(const AtomicFileSink&) = delete;
  AtomicFileSink& operator=(const AtomicFileSink&) = delete;

  void write(std::string_view bytes) override;
  void commit();
  const std::string& temp_path() const { return tmp_; }

 private:
  [[noreturn]] void fail(const std::string& what, int error_number);
  std::string path_;
  std::string tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

// Bytes free for unprivileged users on the file system holding `path` (or its parent folder);
// -1 when unknown.
std::int64_t free_bytes_near(const std::string& path);

}  // namespace ltfit
