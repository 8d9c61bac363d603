// `ltfit train`'s job: opens the run directory and runs the training in it (train_session.cpp).
#include "ltfit/jobs/train_job.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "jobs/train_session.h"
#include "ltfit/config/config_loader.h"
#include "ltfit/config/config_summary.h"
#include "ltfit/jobs/dist_session.h"
#include "ltfit/run/envinfo.h"
#include "ltfit/run/run_dir.h"
#include "ltfit/util/atomic_file.h"
#include "ltfit/util/error.h"
#include "ltfit/util/log.h"

namespace ltfit {

namespace {

namespace fs = std::filesystem;

// The comment on top of a run's config.yaml: what wrote it and the config file it came from
// (made absolute, so the run directory says which of several same-named configs it used).
std::string config_file_header(const Config& config) {
  std::string source = config.source;
  std::error_code error;
  if (fs::is_regular_file(source, error)) {
    const fs::path absolute = fs::absolute(source, error);
    if (!error) source = absolute.lexically_normal().string();
  }
  const auto is_line_break = [](char c) { return c == '\n' || c == '\r'; };
  std::replace_if(source.begin(), source.end(), is_line_break, '?');
  return "# ltfit " LTFIT_VERSION
         ": the resolved config of this run (every key, defaults included)\n# from: " +
         source + "\n";
}

// Where this run writes, locked for the run's lifetime. A resumed run writes only into its
// checkpoint's own run directory or the --run-dir given: never where the checkpoint's embedded
// config (run.out_dir/run.name) points, which the checkpoint's author chose.
OpenRunDir open_run_dir(const Config& config, const TrainJobOptions& options) {
  if (!options.resume && !options.reuse_run_dir) return create_run_dir(config.run, options.run_dir);
  if (options.run_dir) return open_run_dir_to_continue(*options.run_dir);
  if (options.resume) {
    const auto owner = run_dir_of_checkpoint(*options.resume);
    if (!owner) {
      throw ConfigError("--resume " + *options.resume +
                            ": the checkpoint is not in a run directory (<run>/checkpoints/), so "
                            "where the resumed run writes is not known",
                        "pass --run-dir DIR: the directory the resumed run writes to");
    }
    return open_run_dir_to_continue(*owner);
  }
  return open_run_dir_to_continue(fs::path(config.run.out_dir) / config.run.name);
}

// Rank 0's choices, shared: which checkpoint `--resume auto` resolved to and the config it
// resolved (from the checkpoint or the file), so every rank trains the same run.
void share_root_choices(DistSession& dist, Config& config, TrainJobOptions& options) {
  const std::string resume = dist.group->broadcast_string(options.resume.value_or(""));
  const std::string yaml = dist.group->broadcast_string(to_yaml(config));
  if (dist.is_root()) return;
  options.resume = resume.empty() ? std::nullopt : std::optional<std::string>(resume);
  config = load_config_from_string(yaml, config.source + " (as rank 0 resolved it)");
}

}  // namespace

std::optional<std::string> run_dir_of_checkpoint(const std::string& checkpoint) {
  const fs::path parent = fs::absolute(checkpoint).parent_path();
  if (parent.filename() != "checkpoints") return std::nullopt;
  return parent.parent_path().string();
}

namespace {

// Why the run ended, into train.log (the console gets it from the program's top level once the
// file is closed); a new run that failed before its first step also leaves failed.txt, and the
// next run of its name takes the folder (run_dir.h).
void record_failure(ScopedLogFile& log_file, const fs::path& run_dir, bool fresh_run) {
  const ErrorReport report = describe_exception(std::current_exception());
  const std::string text = report.message + (report.hint.empty() ? "" : "\nHINT: " + report.hint);
  log_file.write_only_here(text, /*error=*/report.code != ExitCode::kInterrupted);
  if (fresh_run && report.code != ExitCode::kInterrupted && !run_has_progress(run_dir)) {
    mark_run_failed(run_dir, text);
  }
}

}  // namespace

RunSummary run_train_job(const Config& given_config, const TrainJobOptions& given_options) {
  const auto start = std::chrono::steady_clock::now();
  Config config = given_config;
  TrainJobOptions options = given_options;
  DistSession dist = start_dist_session(config);
  if (dist.active()) share_root_choices(dist, config, options);
  const bool owner = dist.is_root();  // rank 0 alone writes the run directory
  if (!owner) return train_in_run_dir(config, options, dist, fs::path(), start);
  const OpenRunDir opened = open_run_dir(config, options);  // locked until the run ends
  const fs::path& run_dir = opened.path;
  write_text_atomic((run_dir / "config.yaml").string(),
                    config_file_header(config) + to_yaml(config));
  write_envinfo_json((run_dir / "env.json").string(),
                     collect_envinfo(config.data.root, run_dir.string()));
  ScopedLogFile log_file((run_dir / "train.log").string());
  spdlog::info("run directory: {}", run_dir.string());
  log_file.write_only_here("resolved config:\n" + to_yaml(config));
  for (const std::string& line : summarize_config(config)) spdlog::info("config: {}", line);
  spdlog::info("config: every key in {}", (run_dir / "config.yaml").string());
  try {
    return train_in_run_dir(config, options, dist, run_dir, start);
  } catch (...) {
    record_failure(log_file, run_dir, !options.resume && !options.reuse_run_dir);
    throw;
  }
}

}  // namespace ltfit
