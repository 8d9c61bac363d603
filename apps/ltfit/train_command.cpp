// `ltfit train`: train per a config file and write the run directory.
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli_common.h"
#include "commands.h"
#include "ltfit/config/config_loader.h"
#include "ltfit/train/train_job.h"

namespace ltfit::cli {

namespace {

struct TrainArgs {
  std::string config;
  std::vector<std::string> sets;
  std::string run_dir;
  bool json = false;
};

}  // namespace

void add_train_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "train per a config file, writing a run directory");
  cmd->add_option("--config", args->config, "YAML config file (see configs/)")->required();
  cmd->add_option("--set", args->sets,
                  "override a config key: --set data.batch_size=64 "
                  "(the value is parsed as YAML); repeatable");
  cmd->add_option("--run-dir", args->run_dir,
                  "write the run here instead of "
                  "<run.out_dir>/<run.name>");
  cmd->add_flag("--json", args->json, "print summary.json on stdout at the end");
  cmd->callback([args, exit_code] {
    const Config config = load_cli_config(args->config, args->sets);
    TrainJobOptions options;
    if (!args->run_dir.empty()) options.run_dir = args->run_dir;
    const RunSummary summary = run_train_job(config, options);
    if (args->json) std::cout << summary_json(summary) << std::flush;
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
