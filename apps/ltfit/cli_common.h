// Pieces shared by several commands of the front end.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "ltfit/jobs/command_config.h"  // parse_cli_overrides, load_cli_config
#include "ltfit/util/error.h"

namespace ltfit::cli {

// --device and --precision of a command that runs a saved checkpoint (evaluate, interpret,
// calibrate, clean, predict).
inline void add_checkpoint_run_options(CLI::App* cmd, std::string& device, std::string& precision) {
  cmd->add_option("--device", device, "auto | cpu | cuda | cuda:N")->capture_default_str();
  cmd->add_option("--precision", precision,
                  "fp32 | bf16 | fp16 (default: the checkpoint's train.precision; fp16 on a CPU "
                  "runs fp32)");
}

// --json of a command whose result is one JSON document (its logs on stderr).
inline void add_json_flag(CLI::App* cmd, bool& json) {
  cmd->add_flag("--json", json, "print one JSON document on stdout (logs go to stderr)");
}

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
