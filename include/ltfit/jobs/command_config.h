// A config as a command names it: a YAML file, found by path or by name, plus `--set key=value`
// overrides, in order. Shared by the jobs that start from a config file and by the command line.
//
// `--config X` is looked up, first match wins:
//   1. X as given (a path, relative to the working directory);
//   2. X, then X.yaml, in ./configs/ (a checkout of the repository);
//   3. X, then X.yaml, in the installed configs: <prefix>/share/ltfit/configs/, where <prefix> is
//      the folder above the running binary's bin/ (`cmake --install build --prefix P`);
//   4. for a binary run from its CMake build folder (build/ltfit), in the checkout's configs/;
//   5. the configs this binary was built with (shipped_configs.h), so a copied binary finds them.
// A name that matches nothing is a ConfigError (exit 2) listing the configs that were found.
// Thread-safe (the lookups read the file system only).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "ltfit/config/config.h"
#include "ltfit/config/config_loader.h"

namespace ltfit {

inline constexpr const char* kPlanFolder = "experiments";  // plans' subfolder of a config folder

// The `--set key=value` options as overrides (ConfigError on a malformed one).
std::vector<Override> parse_cli_overrides(const std::vector<std::string>& sets);

// The folders searched for configs by name, in order: ./configs, the installed
// share/ltfit/configs next to the running binary, the build folder's checkout's configs/, the
// shipped configs written out of the binary (each when it exists and is not already listed).
std::vector<std::filesystem::path> config_search_dirs();

// The file `--config name` means (see the header); with `kind` "plan", `--plan name` (the same
// search in the folders' experiments/ subfolders). ConfigError (exit 2) when nothing matches,
// listing the names that `ltfit configs` lists; the message names the name as `asked_as` (e.g.
// "ltfit configs"), by default as the flag `kind` is given with (--config, --plan).
std::filesystem::path resolve_config_path(const std::string& name,
                                          const std::string& kind = "config",
                                          const std::string& asked_as = "");

// A config file of a search folder, as `ltfit configs` lists it.
struct ConfigEntry {
  std::string name;            // file name without .yaml
  std::filesystem::path path;  // where it is
  std::string description;     // its first comment line, without '#'; may be empty
};

// The *.yaml files of config_search_dirs() (with `kind` "plan": of their experiments/
// subfolders), sorted by name; a name found in an earlier folder hides it in a later one.
std::vector<ConfigEntry> list_configs(const std::string& kind = "config");

// Loads the config `name` names (resolve_config_path) with the `--set key=value` overrides
// applied, logging the resolved path; Config::source is that path. ConfigError on any mistake.
Config load_cli_config(const std::string& name, const std::vector<std::string>& sets);

}  // namespace ltfit
