// A config as a command names it: a YAML file plus `--set key=value` overrides, in order.
// Shared by the jobs that start from a config file and by the command line. Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "ltfit/config/config.h"
#include "ltfit/config/config_loader.h"

namespace ltfit {

// The `--set key=value` options as overrides (ConfigError on a malformed one).
std::vector<Override> parse_cli_overrides(const std::vector<std::string>& sets);

// Loads `path` with the `--set key=value` overrides applied (ConfigError on any mistake).
Config load_cli_config(const std::string& path, const std::vector<std::string>& sets);

}  // namespace ltfit
