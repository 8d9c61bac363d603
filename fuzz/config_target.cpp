// Fuzz target: the config loader's text entry (load_config_from_string, parse_override).
//
// The input's first line is a `--set` override (`key.path=value`), the rest the YAML file. A bad
// config must end in ConfigError (exit 2) and nothing else; a config that loads must write back
// (to_yaml) into YAML that loads again and writes the same text. Any other exception, a crash or
// a sanitizer report is a finding.
#include <cstdio>
#include <string>
#include <vector>

#include "fuzz_checks.h"
#include "ltfit/config/config_loader.h"
#include "ltfit/util/error.h"
#include "targets.h"

namespace ltfit::fuzz {

Outcome run_config(std::string_view input) {
  const std::size_t newline = input.find('\n');
  const std::string first(input.substr(0, newline));
  const std::string yaml(newline == std::string_view::npos ? std::string_view()
                                                           : input.substr(newline + 1));
  std::vector<Override> overrides;
  try {
    overrides.push_back(parse_override(first));
  } catch (const ConfigError& e) {
    note_refusal(e.what());
  }
  std::string written;
  try {
    written = to_yaml(load_config_from_string(yaml, "fuzz.yaml", overrides));
  } catch (const ConfigError& e) {
    note_refusal(e.what());
    return Outcome::kRefused;
  }
  try {
    const Config again = load_config_from_string(written, "written.yaml");
    if (to_yaml(again) != written) invariant_failed("to_yaml does not round-trip");
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "%s\n--- written:\n%s\n", e.what(), written.c_str());
    invariant_failed("a loaded config writes YAML that does not load");
  }
  return Outcome::kAccepted;
}

}  // namespace ltfit::fuzz
