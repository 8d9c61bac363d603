// Pieces shared by several commands of the front end.
#pragma once

#include <string>
#include <vector>

#include "ltfit/config/config.h"

namespace ltfit::cli {

// Loads `path` with the `--set key=value` overrides applied (ConfigError on any mistake).
Config load_cli_config(const std::string& path, const std::vector<std::string>& sets);

}  // namespace ltfit::cli
