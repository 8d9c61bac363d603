// The run directory: where a training run writes everything (DESIGN.md "The run directory").
//
// A new run never overwrites an earlier one: if `<out_dir>/<name>` already holds a run, the
// run goes to the first free numbered sibling `<name>-2`, `<name>-3`, ...
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "ltfit/config/config.h"

namespace ltfit {

// Picks and creates the run directory: `explicit_dir` if given (must not hold a run), else
// under run.out_dir. Throws RuntimeError if it cannot be created.
std::filesystem::path create_run_dir(const RunConfig& run,
                                     const std::optional<std::string>& explicit_dir);

// True if `dir` already holds a run (a config.yaml or a checkpoints/ folder).
bool holds_run(const std::filesystem::path& dir);

}  // namespace ltfit
