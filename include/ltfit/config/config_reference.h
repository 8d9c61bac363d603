// The config reference: every key of the config with what it accepts, its default, its meaning
// and its valid values, as data and as Markdown (docs/config.md, `ltfit configs --reference`).
//
// Nothing here is written twice: the keys, their types and meanings come from the loader's own
// field lists (src/config/config_loader.cpp, by a walk that reads no document), the defaults from
// to_yaml(Config{}), the valid values from the range rules (config_rules.cpp). A key the loader
// reads is therefore in the reference, and a key without a meaning does not compile.
// Pure functions, thread-safe.
#pragma once

#include <string>
#include <vector>

namespace ltfit {

// One entry of the reference: a section (a map of keys, e.g. `data.augment`) or a key.
struct ConfigKeyDoc {
  std::string path;           // dotted key, e.g. "data.augment.flip", as `--set` takes it
  bool section = false;       // a map of keys; type, default_value and valid are then empty
  std::string type;           // what the loader reads, e.g. "integer", "one of fp32, fp16, bf16"
  std::string default_value;  // as config.yaml writes it, e.g. "16", "[0.9, 0.99]", "null"
  std::string meaning;        // what it does
  std::string valid;          // the range rules, e.g. "an integer from 16 to 4096"; may be empty
};

// Every section and key, in the order config files and config.yaml write them (each section
// before its keys).
std::vector<ConfigKeyDoc> config_reference();

// The reference as a Markdown document: a table per section (key | type | default | meaning |
// valid values), then every default as one YAML file. docs/config.md is this text.
std::string config_reference_markdown();

}  // namespace ltfit
