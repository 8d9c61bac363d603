// Pieces shared by several commands of the front end.
#pragma once

#include "ltfit/jobs/command_config.h"  // parse_cli_overrides, load_cli_config
#include "ltfit/util/error.h"

namespace ltfit::cli {

// The help text of every --config option (command_config.h says how a name is found).
inline constexpr const char* kConfigHelp =
    "YAML config: a file, or a name such as cats_dogs (./configs/, then the installed configs; "
    "`ltfit configs` lists them)";

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
