// `ltfit train`: train per a config file and write the run directory; `--resume` continues one.
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>

#include "cli_common.h"
#include "commands.h"
#include "ltfit/config/config_loader.h"
#include "ltfit/train/checkpoint.h"
#include "ltfit/train/checkpoint_writer.h"
#include "ltfit/jobs/train_job.h"
#include "ltfit/util/error.h"
#include "ltfit/util/signals.h"

namespace ltfit::cli {

namespace {

struct TrainArgs {
  std::string config;
  std::vector<std::string> sets;
  std::string run_dir;
  std::string resume;
  bool json = false;
};

// A checkpoint carries its run's config: resuming uses it, with the --set overrides on top.
Config checkpoint_config(const std::string& checkpoint, const TrainArgs& args) {
  if (!args.config.empty()) {
    spdlog::info("resuming: the checkpoint's own config is used; --config {} is not read",
                 args.config);
  }
  const CheckpointMeta meta = read_checkpoint_meta(checkpoint);
  return load_config_from_string(meta.config_yaml, checkpoint, parse_cli_overrides(args.sets));
}

// Works out config, run directory and checkpoint for `--resume CKPT|auto`.
Config prepare_resume(const TrainArgs& args, TrainJobOptions& options) {
  if (!args.run_dir.empty()) options.run_dir = args.run_dir;
  if (args.resume != "auto") {
    options.resume = args.resume;
    return checkpoint_config(args.resume, args);
  }
  std::string dir = args.run_dir;
  std::optional<Config> fresh;
  if (dir.empty()) {
    if (args.config.empty())
      throw ConfigError("--resume auto needs --run-dir or --config (to find the run directory)");
    fresh = load_cli_config(args.config, args.sets);
    dir = (std::filesystem::path(fresh->run.out_dir) / fresh->run.name).string();
    options.run_dir = dir;
  }
  if (const auto checkpoint = find_resume_checkpoint(dir)) {
    options.resume = *checkpoint;
    return checkpoint_config(*checkpoint, args);
  }
  spdlog::info("--resume auto: no checkpoint in {}, starting the run there", dir);
  options.reuse_run_dir = true;
  if (fresh) return *fresh;
  const std::string saved = (std::filesystem::path(dir) / "config.yaml").string();
  if (args.config.empty() && !std::filesystem::exists(saved))
    throw ConfigError("--resume auto: no checkpoint and no config.yaml in " + dir,
                      "pass --config FILE to start the run");
  return load_cli_config(args.config.empty() ? saved : args.config, args.sets);
}

}  // namespace

void add_train_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "train per a config file, writing a run directory");
  cmd->add_option("--config", args->config,
                  "YAML config file (see configs/); not needed with --resume CKPT");
  cmd->add_option("--set", args->sets,
                  "override a config key: --set data.batch_size=64 "
                  "(the value is parsed as YAML); repeatable");
  cmd->add_option("--run-dir", args->run_dir,
                  "write the run here instead of "
                  "<run.out_dir>/<run.name>");
  cmd->add_option("--resume", args->resume,
                  "continue from a checkpoint (CKPT), or 'auto': the newest checkpoint of the run "
                  "directory (--run-dir, or the config's run.out_dir/run.name), starting the run "
                  "there if it has none");
  cmd->add_flag("--json", args->json, "print summary.json on stdout at the end");
  cmd->callback([args, exit_code] {
    TrainJobOptions options;
    Config config;
    if (!args->resume.empty()) {
      config = prepare_resume(*args, options);
    } else {
      if (args->config.empty()) throw ConfigError("train: --config FILE is required");
      config = load_cli_config(args->config, args->sets);
      if (!args->run_dir.empty()) options.run_dir = args->run_dir;
    }
    StopSignals signals;  // SIGINT/SIGTERM: finish the step, checkpoint, exit 130
    options.stop_signal = [] { return StopSignals::requested(); };
    const RunSummary summary = naming_batch_size_on_oom(
        config.data.batch_size, [&] { return run_train_job(config, options); });
    if (args->json) std::cout << summary_json(summary) << std::flush;
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
