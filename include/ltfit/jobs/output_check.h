// Checking, before a command does its work, that an output file can be written later.
#pragma once

#include <filesystem>
#include <string>

namespace ltfit {

// Fails fast, before a command does its work, unless `file` can be written later: a
// RuntimeError (exit 5) naming the path when `file` is a folder, or when the nearest folder of
// it that exists is not a folder or not writable (a file in the way, a missing permission, a
// read-only file system, /proc, a name too long). `what` names it, e.g. "predictions file
// (--out)". The message names the part of the path that fails and the error of the operation
// that failed there: creating the first missing folder ("cannot create '/proc/nope': No such
// file or directory (the parent '/proc' exists but is on a proc file system, ...)"), or a file in
// the nearest folder when none is missing. What it creates to find out (that folder, or a probe
// file) it removes at once. Thread-safe.
void check_output_file(const std::filesystem::path& file, const std::string& what);

}  // namespace ltfit
