// `ltfit lr-find`: fastai's LR range test on the config's model and data; writes lr_find.csv
// and lr_find.png and prints the suggestions (jobs/lr_find_job.h).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <optional>

#include "cli_common.h"
#include "commands.h"
#include "ltfit/jobs/lr_find_job.h"
#include "ltfit/util/json.h"
#include "ltfit/util/signals.h"
#include "ltfit/util/standard_output.h"

namespace ltfit::cli {

namespace {

struct LrFindArgs {
  std::string config;
  std::vector<std::string> sets;
  LrFindJobOptions job;
  bool json = false;
};

nlohmann::json optional_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

void run_lr_find(const LrFindArgs& args) {
  const LrFindJobResult result = run_lr_find_job(load_cli_config(args.config, args.sets), args.job);
  if (args.json) {
    const LrFindResult& r = result.sweep;
    write_stdout(dump_json(nlohmann::json{{"steps", r.lrs.size()},
                                          {"diverged", r.diverged},
                                          {"frozen", r.frozen},
                                          {"valley", optional_json(r.valley)},
                                          {"steepest", optional_json(r.steepest)},
                                          {"dir", result.dir}}) +
                 "\n");
  }
}

}  // namespace

void add_lr_find_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<LrFindArgs>();
  CLI::App* cmd = app.add_subcommand("lr-find",
                                     "fastai's learning-rate range test: CSV, plot, "
                                     "suggestion (model and optimizer restored)");
  cmd->add_option("--config", args->config, kConfigHelp)->required();
  cmd->add_option("--set", args->sets, "override a config key (key=value); repeatable");
  cmd->add_option("--out", args->job.out,
                  "directory for lr_find.csv and lr_find.png "
                  "(default: <out_dir>/<name>-lr_find)");
  cmd->add_option("--steps", args->job.steps, "steps of the sweep (fastai: 100)")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "print one JSON document on stdout");
  cmd->callback([args, exit_code] {
    StopSignals signals(StopMode::kExitNow);  // nothing to save: exit 130, temporaries removed
    run_lr_find(*args);
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
