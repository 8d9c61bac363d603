// Creating the folders a command writes into (--out, --run-dir, report folders) with errors that
// name the path: a read-only or missing parent, a file in the way or a name over NAME_MAX is a
// RuntimeError (exit 5) "cannot create <what> '<path>': <reason>", never a stray
// std::filesystem_error. Thread-safe.
#pragma once

#include <filesystem>
#include <string>

namespace ltfit {

// Creates `dir` and its parents (nothing to do if it is a directory already); `what` names it
// in the message, e.g. "output folder (--out)".
void create_output_dir(const std::filesystem::path& dir, const std::string& what);

}  // namespace ltfit
