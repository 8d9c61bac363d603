// Loading, overriding, validating and writing the YAML configuration.
//
// The only code that touches yaml-cpp. Errors throw ConfigError naming the file, the key path,
// the line where known, what was expected and what was found. Unknown keys are errors with a
// "did you mean" suggestion. Thread-safe (no shared state).
#pragma once

#include <string>
#include <vector>

#include "ltfit/config/config.h"

namespace ltfit {

// Parses a `key.path=value` override; the value is parsed as YAML.
struct Override {
  std::string key;    // e.g. "data.batch_size"
  std::string value;  // e.g. "64" or "[1e-5, 1e-3]"
};

// Splits "a.b=c" into an Override; throws ConfigError if there is no '=' or no key.
Override parse_override(const std::string& text);

// Reads `path`, applies `overrides` in order, validates, and returns the resolved config.
Config load_config(const std::string& path, const std::vector<Override>& overrides = {});

// Same from YAML text; `source` names it in messages.
Config load_config_from_string(const std::string& yaml, const std::string& source,
                               const std::vector<Override>& overrides = {});

// Validates value ranges and enumerations; throws ConfigError naming the key.
void validate(const Config& config);

// Keys that the rest of `config` makes irrelevant, yet set to other than their default: each as
// "<source>: train.freeze_epochs is 3 but is ignored: train.recipe is one_cycle (...)". Loading
// accepts them (a contradiction, such as train.frozen under fine_tune, is refused instead); the
// commands log these as warnings.
std::vector<std::string> config_warnings(const Config& config);

// The resolved config as YAML, every field written (round-trips through load_config).
std::string to_yaml(const Config& config);

// "5h50m", "90m", "45s", "1h", "3600" -> seconds; throws ConfigError naming `key`.
double parse_duration(const std::string& text, const std::string& key);

}  // namespace ltfit
