// What train's --config, --set, --run-dir, --resume and --init-from mean: see resume.h.
#include "ltfit/jobs/resume.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <optional>

#include "ltfit/config/config_loader.h"
#include "ltfit/jobs/command_config.h"
#include "ltfit/jobs/schedule_keys.h"
#include "ltfit/run/run_dir.h"
#include "ltfit/train/checkpoint.h"
#include "ltfit/train/checkpoint_writer.h"
#include "ltfit/train/early_stopping.h"
#include "ltfit/train/recipe.h"
#include "ltfit/util/error.h"
#include "ltfit/util/input_file.h"

namespace ltfit {

namespace {

namespace fs = std::filesystem;

std::string joined_sets(const std::vector<std::string>& sets) {
  std::string text;
  for (const std::string& s : sets) text += " --set " + s;
  return text;
}

// A resume may change no key the schedule depends on (schedule_keys.h): ConfigError naming them.
void check_schedule_kept(const Config& saved, const Config& resumed, const std::string& checkpoint,
                         const TrainRequest& request) {
  const std::vector<KeyChange> changes = schedule_key_changes(saved, resumed);
  if (changes.empty()) return;
  throw ConfigError(
      "--resume " + checkpoint +
          ": --set changes what the run's schedule depends on: " + describe_changes(changes),
      "a resumed run keeps its schedule: drop those --set; to train on with another "
      "schedule, start a new run from its weights: ltfit train --init-from " +
          checkpoint + joined_sets(request.sets));
}

// The run is complete when the checkpoint holds every epoch of its plan and the run directory
// its summary.json: then that file's path.
std::optional<std::string> completed_summary(const CheckpointMeta& meta, const Config& config,
                                             const std::string& checkpoint,
                                             const ResolvedTrain& out) {
  const bool every_epoch = meta.epochs_done >= total_epochs(plan_recipe(config.train));
  if ((!every_epoch && !stopped_early(meta.hook_states)) || meta.position.batch_in_epoch != 0) {
    return std::nullopt;
  }
  const std::optional<std::string> dir =
      out.options.run_dir ? out.options.run_dir : run_dir_of_checkpoint(checkpoint);
  if (!dir) return std::nullopt;
  const fs::path summary = fs::path(*dir) / "summary.json";
  std::error_code ec;
  if (!fs::is_regular_file(summary, ec)) return std::nullopt;
  return summary.string();
}

// A checkpoint carries its run's config: resuming uses it, with the --set overrides on top.
// Fills out's config, resume and completed_summary.
void continue_from(const std::string& checkpoint, const TrainRequest& request, ResolvedTrain& out) {
  if (!request.config.empty()) {
    spdlog::info("resuming: the checkpoint's own config is used; --config {} is not read",
                 request.config);
  }
  const CheckpointMeta meta = read_checkpoint_meta(checkpoint);
  const Config saved = load_config_from_string(meta.config_yaml, checkpoint);
  out.config =
      load_config_from_string(meta.config_yaml, checkpoint, parse_cli_overrides(request.sets));
  check_schedule_kept(saved, out.config, checkpoint, request);
  out.completed_summary = completed_summary(meta, out.config, checkpoint, out);
  // A finished run keeps weights only (train.checkpoint.keep_resumable false): its last.ckpt is
  // complete, nothing to continue. Any other weights-only file (best.ckpt) cannot be resumed.
  if (meta.weights_only) {
    const bool run_last = fs::path(checkpoint).filename() == "last.ckpt";
    if (run_last && out.completed_summary) return;
    if (run_last && meta.epochs_done >= total_epochs(plan_recipe(out.config.train))) {
      throw CheckpointError("checkpoint '" + checkpoint +
                                "' is a finished run's (every epoch trained; it keeps weights "
                                "only, train.checkpoint.keep_resumable false), but the run's "
                                "summary.json is missing: there is nothing to resume",
                            "evaluate it (ltfit evaluate --checkpoint " + checkpoint +
                                "), or start a new run from its weights: ltfit train --init-from " +
                                checkpoint);
    }
    throw weights_only_error(checkpoint);
  }
  out.options.resume = checkpoint;
}

// --resume CKPT|auto: config, run directory and checkpoint.
ResolvedTrain resolve_continued(const TrainRequest& request) {
  ResolvedTrain out;
  TrainJobOptions& options = out.options;
  if (!request.run_dir.empty()) options.run_dir = request.run_dir;
  if (request.resume.kind == ResumeRequest::Kind::kCheckpoint) {
    continue_from(request.resume.checkpoint, request, out);
    return out;
  }
  std::string dir = request.run_dir;
  std::optional<Config> fresh;
  if (dir.empty()) {
    if (request.config.empty())
      throw ConfigError("--resume auto needs --run-dir or --config (to find the run directory)");
    fresh = load_cli_config(request.config, request.sets);
    dir = (std::filesystem::path(fresh->run.out_dir) / fresh->run.name).string();
    options.run_dir = dir;
  }
  if (const auto checkpoint = find_resume_checkpoint(dir)) {
    continue_from(*checkpoint, request, out);
    return out;
  }
  spdlog::info("--resume auto: no checkpoint in {}, starting the run there", dir);
  options.reuse_run_dir = true;
  if (fresh) {
    out.config = *fresh;
    return out;
  }
  const std::string saved = (std::filesystem::path(dir) / "config.yaml").string();
  if (request.config.empty() && !std::filesystem::exists(saved))
    throw ConfigError("--resume auto: no checkpoint and no config.yaml in " + dir,
                      "pass --config FILE to start the run");
  out.config = load_cli_config(request.config.empty() ? saved : request.config, request.sets);
  return out;
}

// --init-from CKPT: a new run from the checkpoint's weights, with --config's settings (else the
// checkpoint's) and --set on top; the model must be the checkpoint's.
ResolvedTrain resolve_init_from(const TrainRequest& request) {
  const std::string& checkpoint = request.init_from;
  if (request.resume.kind != ResumeRequest::Kind::kNone) {
    throw ConfigError("train: --resume and --init-from exclude each other",
                      "--resume continues a run on its schedule; --init-from starts a new run "
                      "from a checkpoint's weights");
  }
  const CheckpointMeta meta = read_checkpoint_meta(checkpoint);
  const Config saved = load_config_from_string(meta.config_yaml, checkpoint);
  ResolvedTrain out;
  out.config = request.config.empty() ? load_config_from_string(meta.config_yaml, checkpoint,
                                                                parse_cli_overrides(request.sets))
                                      : load_cli_config(request.config, request.sets);
  const ModelConfig& m = out.config.model;
  if (m.arch != saved.model.arch || m.head != saved.model.head) {
    throw ConfigError("--init-from " + checkpoint + ": the checkpoint holds a " + saved.model.arch +
                          " with a " + head_kind_name(saved.model.head) +
                          " head; the config asks for model.arch " + m.arch + ", model.head " +
                          head_kind_name(m.head),
                      "set model.arch and model.head to the checkpoint's, or leave --config out "
                      "to train with the checkpoint's own config");
  }
  out.config.model.pretrained = {PretrainedWeights::Kind::kNone,
                                 ""};  // every weight comes from the checkpoint
  out.options.init_from = checkpoint;
  if (!request.run_dir.empty()) out.options.run_dir = request.run_dir;
  return out;
}

// A relative data.root, made absolute against the current folder: the run's config.yaml and
// checkpoints then name the same folder wherever evaluate or a resume runs later.
void make_data_root_absolute(Config& config) {
  const fs::path root(config.data.root);
  if (root.empty() || root.is_absolute()) return;
  std::error_code ec;
  const fs::path absolute = fs::absolute(root, ec);
  if (!ec) config.data.root = absolute.lexically_normal().string();
}

ResolvedTrain resolve_request(const TrainRequest& request) {
  if (!request.init_from.empty()) return resolve_init_from(request);
  if (request.resume.kind != ResumeRequest::Kind::kNone) return resolve_continued(request);
  if (request.config.empty()) throw ConfigError("train: --config FILE is required");
  ResolvedTrain out;
  out.config = load_cli_config(request.config, request.sets);
  if (!request.run_dir.empty()) out.options.run_dir = request.run_dir;
  return out;
}

}  // namespace

ResumeRequest parse_resume_request(const std::string& text) {
  if (text.empty()) return {};
  if (text == "auto") return {ResumeRequest::Kind::kAuto, ""};
  return {ResumeRequest::Kind::kCheckpoint, text};
}

std::string report_completed_run(const std::string& summary_path) {
  const fs::path run_dir = fs::path(summary_path).parent_path();
  // Under the run's lock, for as long as this looks: only what a killed session left (stale
  // temporaries) is removed; the run's own files stay as they are.
  const OpenRunDir opened = open_run_dir_to_continue(run_dir);
  spdlog::info(
      "the run in {} is complete (every epoch trained, summary.json written): nothing to do, "
      "nothing changed. To train more, start a new run from its weights: ltfit train "
      "--init-from {} --set train.epochs=N",
      run_dir.string(), (run_dir / "checkpoints" / "last.ckpt").string());
  return read_input_file(summary_path, "summary file");
}

ResolvedTrain resolve_resume(const TrainRequest& request) {
  ResolvedTrain out = resolve_request(request);
  make_data_root_absolute(out.config);
  return out;
}

}  // namespace ltfit
