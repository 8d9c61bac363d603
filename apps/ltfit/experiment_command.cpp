// `ltfit experiment`: run a plan's timing matrix, one `ltfit train` child per run, and write
// the report (results.csv, report.md, charts) beside the study's figures.
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <iostream>

#include "cli_common.h"
#include "commands.h"
#include "ltfit/config/config_loader.h"
#include "ltfit/study/experiment_plan.h"
#include "ltfit/study/experiment.h"
#include "ltfit/study/experiment_report.h"
#include "ltfit/util/error.h"
#include "ltfit/util/format.h"
#include "ltfit/util/signals.h"

namespace ltfit::cli {

namespace {

struct ExperimentArgs {
  std::string plan;
  std::optional<double> subset;
  std::optional<std::string> out;
  std::vector<std::string> sets;
};

// --subset first, then the --set overrides, in order.
std::vector<Override> command_overrides(const ExperimentArgs& args) {
  std::vector<Override> overrides;
  if (args.subset) {
    if (!(*args.subset > 0.0 && *args.subset <= 1.0)) {
      throw ConfigError("--subset: expected a fraction in (0, 1], got " +
                        std::to_string(*args.subset));
    }
    overrides.push_back(parse_override(fmt::format("data.subset={}", *args.subset)));
  }
  for (auto& o : parse_cli_overrides(args.sets)) overrides.push_back(std::move(o));
  return overrides;
}

void log_result(std::size_t i, std::size_t n, const RunOutcome& outcome) {
  const std::string head = fmt::format("[{}/{}] {}: ", i + 1, n, outcome.id);
  if (outcome.status != RunStatus::kOk) {
    spdlog::warn("{}{}: {}", head, run_status_name(outcome.status), outcome.reason);
    return;
  }
  const ExperimentRow row = read_experiment_row(outcome);
  const auto mm_ss = [](std::optional<double> s) { return s ? format_mm_ss(*s) : "—"; };
  spdlog::info("{}ok: total {} (train {}, TTA {}), accuracy {:.2f} %{}", head,
               mm_ss(row.total_seconds), mm_ss(row.train_seconds), mm_ss(row.tta_seconds),
               100.0 * row.accuracy.value_or(0.0),
               row.tta_accuracy ? fmt::format(", TTA {:.2f} %", 100.0 * *row.tta_accuracy) : "");
}

int run_command(const ExperimentArgs& args) {
  const ExperimentPlan plan = load_experiment_plan(args.plan);
  ExperimentOptions options;
  options.overrides = command_overrides(args);
  options.out_dir = experiment_out_dir(args.out, plan.name);
  StopSignals signals;  // SIGINT/SIGTERM: the running child checkpoints; later runs are skipped
  options.stop_signal = [] { return StopSignals::requested(); };
  options.on_start = [](std::size_t i, std::size_t n, const PlanRun& run) {
    spdlog::info("[{}/{}] {} ({}): starting", i + 1, n, run.id, run.label);
  };
  options.on_end = log_result;
  spdlog::info("experiment '{}': {} runs, report in {}", plan.name, plan.runs.size(),
               options.out_dir);
  const auto start = std::chrono::steady_clock::now();
  const auto outcomes = run_experiment(plan, options);
  const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - start;
  write_experiment_report(options.out_dir, plan, outcomes, {options.overrides, wall.count()});
  spdlog::info("report: {}/report.md ({} wall)", options.out_dir, format_mm_ss(wall.count()));
  std::cout << options.out_dir << "/report.md\n" << std::flush;
  return StopSignals::requested() ? static_cast<int>(ExitCode::kInterrupted) : 0;
}

}  // namespace

void add_experiment_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ExperimentArgs>();
  CLI::App* cmd = app.add_subcommand(
      "experiment", "run a timing matrix (plan file) and report it beside the study's figures");
  cmd->add_option("--plan", args->plan, "plan file, e.g. configs/experiments/kaggle_vs_colab.yaml")
      ->required();
  cmd->add_option("--subset", args->subset,
                  "use this fraction of each class in both splits (a rehearsal; the report "
                  "labels it and shows estimated full-size times)");
  cmd->add_option("--out", args->out,
                  "report directory (default runs/experiments/<plan name>, numbered if taken)");
  cmd->add_option("--set", args->sets,
                  "override a config key for every run (before each run's own set:); "
                  "repeatable");
  cmd->callback([args, exit_code] { *exit_code = run_command(*args); });
}

}  // namespace ltfit::cli
