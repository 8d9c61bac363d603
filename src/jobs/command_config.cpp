// A config file plus --set overrides: see command_config.h.
#include "ltfit/jobs/command_config.h"

namespace ltfit {

std::vector<Override> parse_cli_overrides(const std::vector<std::string>& sets) {
  std::vector<Override> overrides;
  for (const auto& s : sets) overrides.push_back(parse_override(s));
  return overrides;
}

Config load_cli_config(const std::string& path, const std::vector<std::string>& sets) {
  return load_config(path, parse_cli_overrides(sets));
}

}  // namespace ltfit
