// Writing to standard output (a command's JSON document, table or listing): every write is
// checked and flushed at once, so a full disk, a file-size limit or `> /dev/full` is noticed as
// it happens, not lost at exit. A failure throws RuntimeError (exit 5) naming the reason, so a
// command never reports success with its output cut short. Not for logs (they go to stderr).
// Thread-safe as stdio is; callers write whole lines so that lines never interleave.
#pragma once

#include <string_view>

namespace ltfit {

// Writes `text` to stdout and flushes it; RuntimeError (exit 5) if either fails.
void write_stdout(std::string_view text);

// Flushes whatever stdout still buffers; RuntimeError (exit 5) if that, or an earlier write
// through stdio, failed.
void flush_stdout();

}  // namespace ltfit
