// `ltfit configs`: the configs and plans that `--config NAME` and `--plan NAME` find (the
// working directory's configs/, then the installed ones), each with its first comment line; with
// a NAME, that config's text on stdout, to copy and edit; with --reference, the config reference
// (config_reference.h) that docs/config.md holds.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "commands.h"
#include "ltfit/config/config_reference.h"
#include "ltfit/jobs/command_config.h"
#include "ltfit/util/input_file.h"
#include "ltfit/util/standard_output.h"

namespace ltfit::cli {

namespace {

struct ConfigsArgs {
  std::string name;
  bool json = false;
  bool reference = false;
};

std::string table_text(const std::string& title, const std::vector<ConfigEntry>& entries) {
  std::string out = title + "\n";
  std::size_t width = 0;
  for (const auto& e : entries) width = std::max(width, e.name.size());
  for (const auto& e : entries) {
    out += "  " + e.name + std::string(width - e.name.size() + 2, ' ') + e.description + "\n    " +
           e.path.string() + "\n";
  }
  if (entries.empty()) out += "  (none found)\n";
  return out;
}

nlohmann::json entries_json(const std::vector<ConfigEntry>& entries) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : entries) {
    out.push_back({{"name", e.name}, {"path", e.path.string()}, {"description", e.description}});
  }
  return out;
}

}  // namespace

void add_configs_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ConfigsArgs>();
  CLI::App* cmd = app.add_subcommand(
      "configs",
      "list the configs `--config NAME` finds (./configs/, then the installed ones) and the "
      "plans `experiment --plan NAME` finds; with a NAME, print that config");
  cmd->add_option("name", args->name,
                  "a config's name or file: print it on stdout (ltfit configs cats_dogs > "
                  "mine.yaml)");
  cmd->add_flag("--json", args->json, "print the lists as one JSON document");
  cmd->add_flag("--reference", args->reference,
                "print the config reference (every key: type, default, meaning, valid values) "
                "as Markdown, as docs/config.md holds it");
  cmd->callback([args, exit_code] {
    if (args->reference) {
      write_stdout(config_reference_markdown());
      *exit_code = 0;
      return;
    }
    if (!args->name.empty()) {
      write_stdout(read_input_file(
          resolve_config_path(args->name, "config", "ltfit configs").string(), "config file"));
      *exit_code = 0;
      return;
    }
    const auto configs = list_configs("config");
    const auto plans = list_configs("plan");
    if (args->json) {
      nlohmann::json out{{"configs", entries_json(configs)}, {"plans", entries_json(plans)}};
      write_stdout(out.dump(2) + "\n");
    } else {
      write_stdout(table_text("configs (ltfit train --config NAME):", configs) +
                   table_text("plans (ltfit experiment --plan NAME):", plans));
    }
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
