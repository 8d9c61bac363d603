// Checked writes to standard output: see standard_output.h.
#include "ltfit/util/standard_output.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "ltfit/util/error.h"

namespace ltfit {

namespace {

[[noreturn]] void throw_stdout_error(int error_number) {
  std::clearerr(stdout);
  const std::string reason = error_number != 0 ? std::strerror(error_number) : "write failed";
  throw RuntimeError("cannot write to standard output: " + reason + "; the output is incomplete",
                     "free space on the file system stdout goes to (or send it elsewhere) and "
                     "run the command again");
}

}  // namespace

void write_stdout(std::string_view text) {
  errno = 0;
  const std::size_t written = std::fwrite(text.data(), 1, text.size(), stdout);
  if (written != text.size()) throw_stdout_error(errno);
  flush_stdout();
}

void flush_stdout() {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) throw_stdout_error(errno);
}

}  // namespace ltfit
