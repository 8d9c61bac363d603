// Pieces shared by several commands of the front end.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "ltfit/jobs/command_config.h"  // parse_cli_overrides, load_cli_config
#include "ltfit/util/error.h"

namespace ltfit::cli {

// Fails fast, before a command does its work, unless `file` can be written later: a
// RuntimeError (exit 5) naming the path when `file` is a folder, or when the nearest folder of
// it that exists is not a folder or not writable (a file in the way, a missing permission, a
// read-only file system, a name too long). `what` names it, e.g. "predictions file (--out)".
// Creates nothing.
void check_output_file(const std::filesystem::path& file, const std::string& what);

// data.batch_size of a checkpoint's config; 0 when it cannot be read. For error messages only.
int checkpoint_batch_size(const std::string& checkpoint) noexcept;

// Runs `work`; an out-of-memory error escaping it (LibTorch's, std::bad_alloc) becomes ltfit's
// OutOfMemoryError naming `batch_size`, the data.batch_size of the config in use.
template <typename Work>
auto naming_batch_size_on_oom(int batch_size, Work&& work) -> decltype(work()) {
  try {
    return work();
  } catch (...) {
    rethrow_naming_batch_size(batch_size);
  }
}

}  // namespace ltfit::cli
