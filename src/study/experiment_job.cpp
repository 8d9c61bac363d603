// `ltfit experiment`'s work: see experiment_job.h.
#include "ltfit/study/experiment_job.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "ltfit/config/config_loader.h"
#include "ltfit/jobs/command_config.h"
#include "ltfit/jobs/output_check.h"
#include "ltfit/study/experiment.h"
#include "ltfit/study/experiment_plan.h"
#include "ltfit/study/experiment_report.h"
#include "ltfit/util/error.h"
#include "ltfit/util/format.h"
#include "ltfit/util/signals.h"

namespace ltfit {

namespace {

// --subset first, then the --set overrides, in order.
std::vector<Override> command_overrides(const ExperimentRequest& request) {
  std::vector<Override> overrides;
  if (request.subset) {
    if (!(*request.subset > 0.0 && *request.subset <= 1.0)) {
      throw ConfigError("--subset: expected a fraction in (0, 1], got " +
                        std::to_string(*request.subset));
    }
    overrides.push_back(parse_override(fmt::format("data.subset={}", *request.subset)));
  }
  for (auto& o : parse_cli_overrides(request.sets)) overrides.push_back(std::move(o));
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
  if (const auto lost = row.time_lost_seconds()) {
    spdlog::info(
        "{}killed at epoch {:g} after {}, resumed: the cut cost {} (a restart from zero: {})", head,
        outcome.cut->at_epoch, format_mm_ss(outcome.cut->cut_seconds), format_mm_ss(*lost),
        format_mm_ss(outcome.cut->cut_seconds));
  }
}

}  // namespace

ExperimentJobResult run_experiment_job(const ExperimentRequest& request) {
  const std::string plan_file = resolve_config_path(request.plan, "plan").string();
  if (plan_file != request.plan) spdlog::info("plan {}: {}", request.plan, plan_file);
  const ExperimentPlan plan = load_experiment_plan(plan_file);
  ExperimentOptions options;
  options.overrides = command_overrides(request);
  options.out_dir = experiment_out_dir(request.out, plan.name);
  check_outputs_not_inputs(options.out_dir,
                           {"report.md", "results.csv", "total_time.png", "curves.png", "runs"},
                           request.out ? "the report folder (--out)" : "the report folder",
                           {{"the plan (--plan)", plan_file},
                            {"the plan's base config", plan.base},
                            {"the plan's study file", plan.study.source}});
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
  ExperimentJobResult result{options.out_dir, StopSignals::requested(), {}};
  for (const RunOutcome& o : outcomes) {
    if (o.status == RunStatus::kFailed) result.failed_runs.push_back(o.id);
  }
  return result;
}

}  // namespace ltfit
