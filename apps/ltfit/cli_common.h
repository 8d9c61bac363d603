// Pieces shared by several commands of the front end.
#pragma once

#include <string>
#include <vector>

#include "ltfit/config/config.h"
#include "ltfit/config/config_loader.h"

namespace ltfit::cli {

// The `--set key=value` options as overrides (ConfigError on a malformed one).
std::vector<Override> parse_cli_overrides(const std::vector<std::string>& sets);

// Loads `path` with the `--set key=value` overrides applied (ConfigError on any mistake).
Config load_cli_config(const std::string& path, const std::vector<std::string>& sets);

}  // namespace ltfit::cli
