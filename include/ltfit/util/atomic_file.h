// Writing a file so that a failure never leaves a partial file or destroys the previous one: the
// one writer behind every file ltfit writes (checkpoints, weights, JSON, CSV, YAML, pictures,
// synthetic images).
//
// AtomicFile writes through a plain file descriptor to a hidden temporary file next to `path`
// (`.<name>.<random>.tmp`, created exclusively, so two writers never share one; flock'ed and
// registered as live while it exists, util/temp_files.h), checking every write (EINTR retried);
// commit() fsyncs it, renames it over `path` and fsyncs the directory. If commit() is never reached
// (an exception, a full disk), the destructor closes and removes the temporary file and never
// throws. For tests, LTFIT_TEST_HOLD_TEMP_FILE_MS=N makes commit() wait N ms first, so that a
// test can stop the process while a temporary file exists. A failure throws WriteError, which keeps
// errno so that callers can tell a full disk (ENOSPC, EDQUOT, EFBIG) from the rest. Not thread-safe
// (one AtomicFile per writer); distinct AtomicFiles may run in parallel, even for the same path.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ltfit/util/error.h"

namespace ltfit {

// A write failed; exit 5 like any RuntimeError. The message names the file and the reason.
class WriteError : public RuntimeError {
 public:
  WriteError(const std::string& message, int error_number, std::string hint = {})
      : RuntimeError(message, std::move(hint)), error_number_(error_number) {}
  int error_number() const { return error_number_; }
  // ENOSPC, EDQUOT or EFBIG (the file-size limit, ulimit -f): the same for the user.
  bool disk_full() const;

 private:
  int error_number_;
};

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);  // creates the temporary file
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::string_view bytes);
  void commit();
  const std::string& temp_path() const { return tmp_; }

 private:
  [[noreturn]] void fail(const std::string& what, int error_number);
  std::string path_;
  std::string tmp_;
  int fd_ = -1;
  int live_slot_ = -1;  // register_live_temp_file's slot for tmp_
  bool committed_ = false;
};

// `bytes` into `path` through an AtomicFile. WriteError (exit 5) names the file; on a full disk
// its hint says to free space.
void write_file_atomic(const std::string& path, std::string_view bytes);

// The same for text (JSON, CSV, YAML, Markdown).
void write_text_atomic(const std::string& path, const std::string& text);

// Bytes free for unprivileged users on the file system holding `path` (or its parent folder);
// -1 when unknown.
std::int64_t free_bytes_near(const std::string& path);

}  // namespace ltfit
