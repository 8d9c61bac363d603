// Running an experiment plan, one `ltfit train` child process per run (experiment.h).
//
// A child gets `train --config <base> --set ... --run-dir <out>/runs/<id> --json`, stdin from
// /dev/null, stdout to <out>/runs/<id>.json (its summary) and stderr to <out>/runs/<id>.log; a
// multi-GPU run's child is torchrun with that command line, whose ranks share those files (rank 0
// alone prints the summary). The parent polls for the child's end (child_process.h) so that a stop
// request (SIGINT/SIGTERM/SIGHUP to the parent alone) can be passed on as SIGINT: the child then
// checkpoints and exits 130 (torchrun passes it on to its ranks as SIGTERM, which does the same).
// A Ctrl-C at the terminal reaches the child too (one process group); the SIGINT passed on comes
// within the poll interval, well inside the 2 s in which the child takes a repeated signal for
// the same request (util/signals.h), so it never turns into a "stop now".
// A run with `kill_at_epoch:` is killed with SIGKILL at that point and started again with
// `--resume auto` (run_cut.h), its second log <out>/runs/<id>.resumed.log.
#include "ltfit/study/experiment.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <torch/cuda.h>

#include "ltfit/config/config_loader.h"
#include "ltfit/train/checkpoint.h"
#include "ltfit/train/checkpoint_writer.h"
#include "ltfit/train/recipe.h"
#include "ltfit/util/device.h"
#include "ltfit/util/error.h"
#include "ltfit/util/format.h"
#include "ltfit/util/precision.h"
#include "ltfit/util/signals.h"
#include "ltfit/util/stopwatch.h"
#include "study/child_process.h"

namespace ltfit {
namespace {

namespace fs = std::filesystem;

// The run `args` trains, killed at `cut.at_epoch` and started again with --resume auto (its log
// <run_dir>.resumed.log, which `log_path` then names); fills `cut`.
ChildEnd spawn_with_cut(std::vector<std::string> args, const std::string& run_dir,
                        std::string& log_path, const std::function<bool()>& stop_signal,
                        RunCut& cut) {
  CutClock clock((fs::path(run_dir) / "epochs.csv").string(), cut.at_epoch);
  const auto start = std::chrono::steady_clock::now();
  ChildEnd end =
      wait_child(spawn(args, run_dir + ".json", log_path), stop_signal, &clock, &cut.happened);
  cut.cut_seconds = seconds_since(start);
  if (!cut.happened) return end;
  spdlog::info("{}: killed (SIGKILL) at epoch {:g}, after {}; starting it again with --resume auto",
               run_dir, cut.at_epoch, format_mm_ss(cut.cut_seconds));
  if (const auto checkpoint = find_resume_checkpoint(run_dir)) {
    try {
      const CheckpointMeta meta = read_checkpoint_meta(*checkpoint);
      cut.resumed_epochs = meta.epochs_done;
      cut.resumed_batch = meta.position.batch_in_epoch;
      cut.kept_seconds = meta.train_seconds;
    } catch (const Error&) {  // the resumed attempt says what is wrong with it
    }
  }
  args.insert(args.end(), {"--resume", "auto"});
  log_path = run_dir + ".resumed.log";
  const auto restart = std::chrono::steady_clock::now();
  end = wait_child(spawn(args, run_dir + ".json", log_path), stop_signal);
  cut.resume_seconds = seconds_since(restart);
  return end;
}

std::string exit_reason(const ChildEnd& end, const std::string& log_path) {
  const std::string line = last_error_line(log_path);
  std::string what = end.signal != 0 ? "killed by signal " + std::to_string(end.signal)
                                     : "exit " + std::to_string(end.code);
  if (end.signal == SIGKILL) what += " (out of host memory?)";
  return line.empty() ? what + " (see " + log_path + ")" : what + ": " + line;
}

// The GPUs this machine has: the option, else the visible CUDA devices.
int machine_gpu_count(const ExperimentOptions& options) {
  if (options.machine_gpus) return *options.machine_gpus;
  return static_cast<int>(torch::cuda::device_count());
}

std::string launcher_python(const ExperimentOptions& options) {
  if (!options.python.empty()) return options.python;
  const char* python = std::getenv("LTFIT_PYTHON");
  return python && *python ? python : "python3";
}

// The binary's real path: torchrun execs it by name, and /proc/self/exe would be torchrun's
// own Python there.
std::string real_executable(const std::string& executable) {
  std::error_code error;
  const fs::path path = fs::canonical(executable, error);
  return error ? executable : path.string();
}

// Spawns one run (killed and resumed when `kill_at_epoch` is given) and records its outcome.
void execute(const ExperimentPlan& plan, const std::vector<Override>& overrides,
             const std::optional<double>& kill_at_epoch, const ExperimentOptions& options,
             RunOutcome& outcome) {
  std::string log_path = outcome.run_dir + ".log";
  ChildCommand command{options.executable,
                       plan.base,
                       overrides,
                       outcome.run_dir,
                       std::max(1, outcome.gpus.resolve(outcome.machine_gpus)),
                       launcher_python(options)};
  if (command.processes >= 2) command.executable = real_executable(command.executable);
  ChildEnd end;
  try {
    if (kill_at_epoch) {
      outcome.cut = RunCut{};
      outcome.cut->at_epoch = *kill_at_epoch;
      end = spawn_with_cut(child_argv(command), outcome.run_dir, log_path, options.stop_signal,
                           *outcome.cut);
    } else {
      end = wait_child(spawn(child_argv(command), outcome.run_dir + ".json", log_path),
                       options.stop_signal);
    }
    outcome.exit_code = end.status();
  } catch (const RuntimeError& e) {
    if (command.processes < 2) throw;  // no ltfit binary to run: nothing else can run either
    outcome.status = RunStatus::kFailed;
    outcome.reason = std::string(e.what()) + " (set LTFIT_PYTHON to a Python with torch)";
    return;
  }
  const bool summary = fs::exists(fs::path(outcome.run_dir) / "summary.json");
  if (outcome.exit_code == 0 && summary) {
    outcome.status = RunStatus::kOk;
    return;
  }
  outcome.status = RunStatus::kFailed;
  outcome.reason = outcome.exit_code == 0 ? "exit 0 but no summary.json was written"
                                          : exit_reason(end, log_path);
}

// A run's kill_at_epoch must come before its last epoch ends: ConfigError naming it.
void check_kill_at_epoch(const ExperimentPlan& plan, const PlanRun& run, const Config& config) {
  if (!run.kill_at_epoch) return;
  const int epochs = total_epochs(plan_recipe(config.train));
  if (*run.kill_at_epoch < epochs) return;
  throw ConfigError(
      "runs[" + run.id + "].kill_at_epoch: " + fmt::format("{:g}", *run.kill_at_epoch) +
          " is not before the run's end (" + std::to_string(epochs) + " epochs)",
      "cut it earlier, halfway for instance: kill_at_epoch: " + fmt::format("{:g}", epochs / 2.0));
}

// Every run's config, resolved before the first run starts: a typo in one run's set: (or a base
// config that is not one) stops the plan with exit 2 naming the run, instead of failing each run
// after the runs before it took their time.
std::vector<Config> resolve_run_configs(const ExperimentPlan& plan,
                                        const std::vector<Override>& extra) {
  std::vector<Config> configs;
  for (const PlanRun& run : plan.runs) {
    try {
      configs.push_back(load_config(plan.base, run_overrides(plan, run, extra)));
      check_kill_at_epoch(plan, run, configs.back());
    } catch (const ConfigError& e) {
      throw ConfigError("plan " + plan.source + ":" + std::to_string(run.line) + ": run '" +
                            run.id + "' has no valid config (base " + plan.base +
                            ", then set:, --set and the run's set:): " + e.what(),
                        e.hint().empty() ? "fix the run's set: (or the base config); no run was "
                                           "started"
                                         : e.hint() + " (no run was started)");
    }
  }
  return configs;
}

}  // namespace

std::vector<std::string> child_argv(const ChildCommand& command) {
  std::vector<std::string> args;
  if (command.processes >= 2) {
    args = {command.python,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            std::to_string(command.processes),
            "--no-python"};
  }
  for (const auto& arg :
       {command.executable, std::string("train"), std::string("--config"), command.base})
    args.push_back(arg);
  for (const auto& o : command.overrides) {
    args.push_back("--set");
    args.push_back(o.key + "=" + o.value);
  }
  for (const char* arg : {"--run-dir", command.run_dir.c_str(), "--json"}) args.emplace_back(arg);
  return args;
}

std::string gpus_not_applicable_reason(const RunGpus& gpus, int machine_gpus, int batch_size) {
  if (!gpus.given) return "";
  const auto plural = [](int n) { return std::to_string(n) + (n == 1 ? " GPU" : " GPUs"); };
  const std::string here = ", this machine has " + std::to_string(machine_gpus);
  if (gpus.all && machine_gpus < 1) return "gpus: all needs at least 1 GPU" + here;
  if (!gpus.all && gpus.count > machine_gpus) return "needs " + plural(gpus.count) + here;
  const int used = gpus.resolve(machine_gpus);
  if (used >= 2 && batch_size > 0 && batch_size % used != 0) {
    return "data.batch_size " + std::to_string(batch_size) +
           " (the global batch) does not split evenly over " + plural(used);
  }
  return "";
}

const char* run_status_name(RunStatus status) {
  switch (status) {
    case RunStatus::kOk:
      return "ok";
    case RunStatus::kFailed:
      return "failed";
    case RunStatus::kNotApplicable:
      return "n/a";
  }
  return "?";
}

std::vector<Override> run_overrides(const ExperimentPlan& plan, const PlanRun& run,
                                    const std::vector<Override>& extra) {
  std::vector<Override> all = plan.overrides;
  all.insert(all.end(), extra.begin(), extra.end());
  all.insert(all.end(), run.overrides.begin(), run.overrides.end());
  return all;
}

std::string not_applicable_reason(const Config& config) {
  torch::Device device = torch::kCPU;
  try {
    device = resolve_device(config.train.device);
  } catch (const ConfigError&) {
    return "";  // the run itself reports the missing device
  }
  try {
    check_precision(config.train.precision, device);
  } catch (const ConfigError& e) {
    const bool automatic = config.train.device.kind == DeviceRequest::Kind::kAuto;
    return std::string(e.what()) +
           (automatic ? " (train.device auto resolves to " + device.str() + " here)" : "");
  }
  return "";
}

std::string last_error_line(const std::string& log_path) {
  std::ifstream in(log_path);
  std::string line, found;
  while (std::getline(in, line)) {
    for (const char* level : {" error: ", " critical: "}) {
      const std::size_t at = line.find(level);
      if (at == std::string::npos) continue;
      const std::string message = line.substr(at + std::strlen(level));
      if (message.rfind("HINT: ", 0) != 0) found = message;
    }
  }
  return found;
}

std::string experiment_out_dir(const std::optional<std::string>& explicit_out,
                               const std::string& plan_name) {
  const auto holds_experiment = [](const fs::path& dir) {
    return fs::exists(dir / "results.csv") || fs::exists(dir / "runs");
  };
  if (explicit_out) {
    if (holds_experiment(*explicit_out)) {
      throw ConfigError("--out " + *explicit_out + " already holds an experiment",
                        "choose another --out, or leave it out for a numbered directory");
    }
    return *explicit_out;
  }
  const fs::path first = fs::path("runs") / "experiments" / plan_name;
  fs::path dir = first;
  for (int n = 2; holds_experiment(dir); ++n) dir = first.string() + "-" + std::to_string(n);
  return dir.string();
}

std::vector<RunOutcome> run_experiment(const ExperimentPlan& plan,
                                       const ExperimentOptions& options) {
  std::vector<Config> configs = resolve_run_configs(plan, options.overrides);
  const fs::path runs_dir = fs::path(options.out_dir) / "runs";
  std::error_code error;
  fs::create_directories(runs_dir, error);
  if (error) {
    throw RuntimeError("cannot create '" + runs_dir.string() + "': " + error.message());
  }
  std::vector<RunOutcome> outcomes;
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    const PlanRun& run = plan.runs[i];
    RunOutcome outcome;
    outcome.id = run.id;
    outcome.label = run.label;
    outcome.study_run = run.study_run;
    outcome.gpus = run.gpus;
    if (run.gpus.given) outcome.machine_gpus = machine_gpu_count(options);
    outcome.run_dir = (runs_dir / run.id).string();
    const auto overrides = run_overrides(plan, run, options.overrides);
    outcome.config = std::move(configs[i]);
    if (options.on_start) options.on_start(i, plan.runs.size(), run);
    std::string na = gpus_not_applicable_reason(
        run.gpus, outcome.machine_gpus, outcome.config ? outcome.config->data.batch_size : 0);
    if (na.empty() && outcome.config) na = not_applicable_reason(*outcome.config);
    if (options.stop_signal && options.stop_signal()) {
      outcome.reason = "not run: stopped";
    } else if (!na.empty()) {
      outcome.status = RunStatus::kNotApplicable;
      outcome.reason = na;
    } else {
      execute(plan, overrides, run.kill_at_epoch, options, outcome);
    }
    if (options.on_end) options.on_end(i, plan.runs.size(), outcome);
    outcomes.push_back(std::move(outcome));
  }
  return outcomes;
}

}  // namespace ltfit
