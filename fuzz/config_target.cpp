// Fuzz target: the config loader's text entry (load_config_from_string, parse_override).
//
// The input's first line is a `--set` override (`key.path=value`), the rest the YAML file. A bad
// config must end in ConfigError (exit 2) and nothing else; a config that loads must write back
// (to_yaml, what run directories and checkpoints keep and `train --resume` reads) into YAML that
// loads again as the same config. Any other exception, a crash or a sanitizer report is a
// finding.
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
  Config loaded;
  try {
    loaded = load_config_from_string(yaml, "fuzz.yaml", overrides);
  } catch (const ConfigError& e) {
    note_refusal(e.what());
    return Outcome::kRefused;
  }
  const std::string written = to_yaml(loaded);
  try {
    Config again = load_config_from_string(written, "written.yaml");
    again.source = loaded.source;  // the file it came from, not part of the config
    if (!(again == loaded)) {
      std::fprintf(stderr, "--- written:\n%s\n--- written again:\n%s\n", written.c_str(),
                   to_yaml(again).c_str());
      invariant_failed("a config written by to_yaml loads back as another config");
    }
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "%s\n--- written:\n%s\n", e.what(), written.c_str());
    invariant_failed("a loaded config writes YAML that does not load");
  }
  return Outcome::kAccepted;
}

}  // namespace ltfit::fuzz
