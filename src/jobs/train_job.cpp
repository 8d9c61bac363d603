#include "ltfit/jobs/train_job.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>

#include <spdlog/spdlog.h>
#include <torch/utils.h>

#include "ltfit/config/config_loader.h"
#include "ltfit/config/config_summary.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/data/loader.h"
#include "ltfit/eval/evaluator.h"
#include "ltfit/eval/tta.h"
#include "ltfit/jobs/dist_session.h"
#include "ltfit/jobs/train_tensorboard.h"
#include "ltfit/jobs/training_setup.h"
#include "ltfit/run/envinfo.h"
#include "ltfit/run/metrics_writer.h"
#include "ltfit/run/progress.h"
#include "ltfit/run/run_dir.h"
#include "ltfit/run/timing.h"
#include "ltfit/train/checkpoint_writer.h"
#include "ltfit/train/data_parallel.h"
#include "ltfit/train/recipe.h"
#include "ltfit/train/standard_hooks.h"
#include "ltfit/train/trainer.h"
#include "ltfit/util/atomic_file.h"
#include "ltfit/util/device.h"
#include "ltfit/util/error.h"
#include "ltfit/util/format.h"
#include "ltfit/util/log.h"
#include "ltfit/util/precision.h"

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

// The unreadable files one rank shares at the end of a data-parallel run; when a rank has more,
// the ranks' counts are summed instead (a file unreadable on two ranks then counts twice).
constexpr std::int64_t kMaxSharedPathBytes = std::int64_t{256} << 20;
constexpr std::size_t kSkippedExamplesShown = 40;  // two loaders' worth of examples

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

// Keeps the stats of every finished epoch, so a stop that arrives after the last one (when
// Trainer::fit throws instead of returning them) still leaves the figures for the summary.
class EpochLog : public TrainObserver {
 public:
  void on_epoch_end(const EpochStats& epoch) override { epochs.push_back(epoch); }
  std::vector<EpochStats> epochs;
};

// Loads the checkpoint into the built model and optimizer; returns where to continue.
CheckpointMeta resume_from(const std::string& path, Classifier& model,
                           torch::optim::Optimizer& optimizer,
                           const std::vector<std::string>& classes) {
  CheckpointMeta meta = load_checkpoint(path, model, &optimizer, /*restore_rng=*/true);
  if (meta.classes != classes) {
    throw CheckpointError("checkpoint '" + path + "' was trained on other classes than data.root",
                          "resume with the same data, or start a new run");
  }
  spdlog::info(
      "resuming from {}: {} epoch(s) and {} step(s) done (stage {}, epoch {} of it, "
      "batch {})",
      path, meta.epochs_done, meta.global_step, meta.position.stage, meta.position.epoch_in_stage,
      meta.position.batch_in_epoch);
  return meta;
}

std::string class_list(const std::vector<std::string>& classes) {
  std::string text;
  for (const std::string& c : classes) text += (text.empty() ? "" : ", ") + c;
  return "[" + text + "]";
}

// --init-from: the checkpoint's weights, head included, into the freshly built model (the
// optimizer and the schedule start afresh).
void init_weights_from(const std::string& path, Classifier& model,
                       const std::vector<std::string>& classes) {
  const CheckpointMeta meta = read_checkpoint_meta(path);
  if (meta.classes != classes) {
    throw CheckpointError("--init-from " + path + ": the checkpoint was trained on classes " +
                              class_list(meta.classes) + ", data.root has " + class_list(classes),
                          "train more on data with the checkpoint's classes, or start a new run "
                          "without --init-from");
  }
  load_checkpoint(path, model, nullptr);
  spdlog::info("weights from {} ({} epoch(s), {} step(s) there); fresh optimizer and schedule",
               path, meta.epochs_done, meta.global_step);
}

// TTA on the validation set under the training precision; fills the summary's TTA fields.
// Returns the plain pass's confusion matrix.
torch::Tensor run_final_tta(const Config& config, Classifier& model, Loader& valid_loader,
                            const LoaderOptions& valid_options, const torch::Device& device,
                            RunSummary& summary) {
  const EvalOptions eval_options{device, config.train.channels_last,
                                 resolve_eval_precision(config.train.precision, device)};
  const TtaResult tta = run_tta(model, valid_loader, valid_options, config.eval, eval_options);
  summary.tta_accuracy = tta.tta.accuracy;
  summary.tta_seconds = tta.seconds;  // TTA's own plain pass included, as the study counts it
  summary.total_seconds = summary.train_seconds + tta.seconds;
  spdlog::info("TTA {} ({} views, beta {}): accuracy {:.4f} (plain {:.4f}) in {}",
               tta_mode_name(config.eval.tta_mode), tta.views, tta.beta, tta.tta.accuracy,
               tta.plain.accuracy, format_mm_ss(tta.seconds));
  return tta.plain.confusion;
}

// The loader over the whole validation set for the final passes (TTA, the confusion matrix):
// the run's own, or, in a data-parallel run whose loader holds this rank's part, one over every
// image, built once on first use.
class WholeValidation {
 public:
  WholeValidation(const TrainingSetup& setup, bool sharded) : setup_(setup), sharded_(sharded) {}
  Loader& get() {
    if (!sharded_) return *setup_.valid_loader;
    if (!whole_) whole_.emplace(setup_.index.valid, setup_.valid_options);
    return *whole_;
  }

 private:
  const TrainingSetup& setup_;
  bool sharded_;
  std::optional<Loader> whole_;
};

// The final model's confusion matrix over the whole validation set, for TensorBoard when no TTA
// pass gave it: one more plain pass.
torch::Tensor validation_confusion(const Config& config, Classifier& model, Loader& whole,
                                   const torch::Device& device) {
  const EvalResult result = evaluate(
      model, whole,
      {device, config.train.channels_last, resolve_eval_precision(config.train.precision, device)});
  spdlog::info("validation confusion matrix for TensorBoard: {} images in {:.1f} s", result.count,
               result.seconds);
  return result.confusion;
}

// Unreadable images, each counted once: in a data-parallel run (a collective there) every rank
// shares the files it found unreadable in its slices, and the count is that of their union.
void record_skipped(RunSummary& summary, const Loader& train, const Loader& valid,
                    DistSession& dist) {
  const SkippedImages skipped_train = train.skipped();
  const SkippedImages skipped_valid = valid.skipped();
  summary.skipped_images = skipped_train.count + skipped_valid.count;
  summary.skipped_examples = skipped_train.examples;
  for (const auto& e : skipped_valid.examples) summary.skipped_examples.push_back(e);
  if (dist.active()) {
    std::set<std::string> all(skipped_train.paths.begin(), skipped_train.paths.end());
    all.insert(skipped_valid.paths.begin(), skipped_valid.paths.end());
    std::string mine;  // NUL-separated: no path holds a NUL
    for (const auto& p : all) mine += p + '\0';
    if (dist.group->any(static_cast<std::int64_t>(mine.size()) > kMaxSharedPathBytes)) {
      std::vector<torch::Tensor> count{
          torch::tensor({summary.skipped_images}, torch::kInt64).to(dist.group->device())};
      dist.group->all_reduce_sum(count);
      summary.skipped_images = count[0].cpu().item<std::int64_t>();
      spdlog::warn("{} unreadable image(s) over all ranks (summed per rank)",
                   summary.skipped_images);
      return;
    }
    for (int r = 0; r < dist.world_size(); ++r) {
      const std::string theirs = dist.group->broadcast_string(
          r == dist.rank() ? mine : std::string(), r, kMaxSharedPathBytes);
      for (std::size_t at = 0, end; (end = theirs.find('\0', at)) != std::string::npos;
           at = end + 1) {
        std::string path = theirs.substr(at, end - at);
        if (all.insert(path).second && summary.skipped_examples.size() < kSkippedExamplesShown) {
          summary.skipped_examples.push_back(path + ": unreadable on rank " + std::to_string(r) +
                                             " (its log says why)");
        }
      }
    }
    summary.skipped_images = static_cast<std::int64_t>(all.size());
  }
  if (summary.skipped_images > 0) {
    spdlog::warn("{} unreadable image(s) were skipped (listed above and in summary.json)",
                 summary.skipped_images);
  }
}

// A checkpoint's decoding failures name positions in the training sample list: one past its end
// means the images changed since the checkpoint was written.
void check_decode_failures(const DecodeFailures& failures, std::int64_t samples,
                           const std::string& checkpoint) {
  for (const auto* list : {&failures.left_out, &failures.found}) {
    if (!list->empty() && list->back() >= samples) {
      throw CheckpointError("checkpoint '" + checkpoint + "' leaves out training image " +
                                std::to_string(list->back()) + " (failed to decode), but the " +
                                "training set now has " + std::to_string(samples) + " images",
                            "resume with the images the run was started on, or start a new run");
    }
  }
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

// The run in its opened directory (run_dir empty on the ranks other than 0): set-up, training,
// TTA, summary.
RunSummary train_in_run_dir(const Config& config, const TrainJobOptions& options, DistSession& dist,
                            const fs::path& run_dir, std::chrono::steady_clock::time_point start) {
  const bool owner = dist.is_root();
  torch::manual_seed(config.run.seed);
  const torch::Device device = dist.device;
  spdlog::info("device: {}", describe_device(device));
  check_precision(config.train.precision, device);
  configure_backends(device, config.run.deterministic);
  TrainingSetup setup = make_training_setup(config, device, /*with_valid=*/true, &dist);
  const DatasetIndex& index = setup.index;
  Loader& train_loader = *setup.train_loader;
  Loader& valid_loader = *setup.valid_loader;
  Classifier& model = setup.model;
  auto& optimizer = setup.optimizer;

  CheckpointMeta resumed;
  TrainState start_state;
  if (options.resume) {
    resumed = resume_from(*options.resume, model, *optimizer, index.classes);
    start_state = {resumed.position, resumed.global_step,     resumed.epochs_done,
                   resumed.scaler,   resumed.decode_failures, resumed.hook_states};
    check_decode_failures(resumed.decode_failures, train_loader.size(), *options.resume);
  }
  if (options.init_from) init_weights_from(*options.init_from, model, index.classes);
  std::optional<MetricsWriter::ResumeAt> metrics_resume;
  if (options.resume) metrics_resume = {{resumed.global_step, resumed.epochs_done}};
  std::optional<MetricsWriter> metrics;
  std::optional<ProgressReporter> progress;
  if (owner) {
    metrics.emplace(run_dir.string(), kLayerGroups, metrics_resume);
    progress.emplace(static_cast<std::int64_t>(config.data.batch_size) * config.train.accumulate);
  }
  std::optional<TrainTensorBoard> tensorboard;  // <run dir>/tb/
  if (owner && config.run.tensorboard) {
    tensorboard.emplace(run_dir.string(), kLayerGroups, start_state.global_step, index.classes);
  }
  CheckpointMeta run_meta;
  run_meta.config_yaml = to_yaml(config);
  run_meta.classes = index.classes;
  const auto train_start = std::chrono::steady_clock::now();
  const double setup_seconds = std::chrono::duration<double>(train_start - start).count();
  CheckpointWriterOptions checkpoint_options;
  checkpoint_options.cadence = config.train.checkpoint;
  checkpoint_options.time_limit_seconds = config.train.time_limit_seconds;
  checkpoint_options.stop_signal = options.stop_signal;
  checkpoint_options.prior_train_seconds = resumed.train_seconds;
  checkpoint_options.best_accuracy = options.resume ? resumed.best_accuracy : -1.0;
  checkpoint_options.session_start = start;
  checkpoint_options.train_start = train_start;
  checkpoint_options.tta_passes = config.eval.tta ? tta_passes(config.eval) : 0;
  checkpoint_options.write = owner;
  CheckpointWriter checkpoints(owner ? (run_dir / "checkpoints").string() : std::string(), model,
                               *optimizer, run_meta, checkpoint_options);
  Profiler profiler(device, config.train.profile);
  profiler.add_earlier(resumed.phase_seconds);  // timing.json covers every session
  EpochLog epoch_log;
  ScheduleHook schedule;
  AccumulateHook accumulate(config.train.accumulate);
  std::optional<ClipGradHook> clip;
  std::optional<ObserverHook> progress_hook, metrics_hook;
  ObserverHook epoch_log_hook(epoch_log);
  ProfilerHook profiler_hook;
  std::optional<DataParallelHook> data_parallel;
  std::vector<Hook*> hooks{&schedule, &accumulate, &epoch_log_hook, &checkpoints, &profiler_hook};
  if (owner) {
    hooks.push_back(&progress_hook.emplace(*progress));
    hooks.push_back(&metrics_hook.emplace(*metrics));
    if (tensorboard) hooks.push_back(&tensorboard->hook());
  }
  if (config.train.clip_grad_norm > 0) hooks.push_back(&clip.emplace(config.train.clip_grad_norm));
  if (dist.active()) hooks.push_back(&data_parallel.emplace(*dist.group, config.dist));
  Trainer trainer(model, *optimizer, tensorboard ? tensorboard->tap(train_loader) : train_loader,
                  &valid_loader, trainer_options(config, device, dist.group.get()), hooks,
                  &profiler);
  const std::vector<StagePlan> plan = plan_recipe(config.train);
  std::vector<EpochStats> history;
  bool stopped_after_last_epoch = false;
  try {
    history = trainer.fit(plan, start_state);
  } catch (const InterruptedError& e) {
    if (trainer.state().global_epoch < total_epochs(plan)) {
      if (!owner) throw;
      write_timing_json(
          (run_dir / "timing.json").string(), profiler,
          resumed.train_seconds +
              std::chrono::duration<double>(std::chrono::steady_clock::now() - train_start).count(),
          std::nullopt);
      throw InterruptedError(std::string(e.what()) + ": " + checkpoints.last_path(),
                             "continue with: ltfit train --resume auto --run-dir " +
                                 run_dir.string() + " --config " +
                                 (run_dir / "config.yaml").string());
    }
    // Every epoch ran and was checkpointed: the request came too late to cut anything short.
    spdlog::warn(
        "stop requested after the last epoch and its checkpoint were complete: finishing the "
        "run's summary (a second signal stops at once)");
    history = epoch_log.epochs;
    stopped_after_last_epoch = true;
  }
  // One clock for the summary and the checkpoints: training from the first step (set-up, weight
  // download included, is setup_seconds, counted apart), summed over every session.
  const double train_seconds =
      resumed.train_seconds +
      std::chrono::duration<double>(std::chrono::steady_clock::now() - train_start).count();

  RunSummary summary;
  summary.run_dir = run_dir.string();
  summary.arch = config.model.arch;
  summary.device = describe_device(device);
  summary.classes = index.classes;
  summary.epochs = trainer.state().global_epoch;
  summary.train_images = train_loader.planned();  // readable: what each epoch is planned over
  summary.train_skipped_images =
      static_cast<std::int64_t>(index.train.size()) - summary.train_images;
  summary.valid_images = static_cast<std::int64_t>(index.valid.size());
  summary.accuracy = history.empty() ? resumed.accuracy : history.back().accuracy;
  summary.error_rate = 1.0 - summary.accuracy;
  summary.valid_loss = history.empty() ? resumed.valid_loss : history.back().valid_loss;
  summary.best_accuracy = checkpoints.best_accuracy();
  summary.train_seconds = train_seconds;
  summary.setup_seconds = setup_seconds;
  summary.total_seconds = train_seconds;
  summary.world_size = dist.world_size();
  summary.backend = dist.backend_name();
  summary.global_batch = config.data.batch_size;
  summary.owner = owner;
  record_skipped(summary, train_loader, valid_loader, dist);  // the last collective
  if (!owner) {
    spdlog::info("done: rank 0 evaluates and writes the run directory");
    return summary;
  }
  torch::Tensor confusion;  // the final model's over the validation set, for TensorBoard
  WholeValidation whole(setup, dist.active());
  if (config.eval.tta) {
    ScopedPhase phase(profiler, Phase::kTta);
    confusion = run_final_tta(config, model, whole.get(), setup.valid_options, device, summary);
  }
  if (tensorboard) {
    if (!confusion.defined()) confusion = validation_confusion(config, model, whole.get(), device);
    tensorboard->finish(confusion);
    spdlog::info("TensorBoard events: {} ({} bytes)", tensorboard->writer().path(),
                 tensorboard->writer().bytes());
  }
  write_summary((run_dir / "summary.json").string(), summary);
  write_timing_json((run_dir / "timing.json").string(), profiler, summary.train_seconds,
                    summary.tta_seconds);
  spdlog::info("time per phase{}:\n{}", config.train.profile ? "" : " (device not synchronised)",
               format_phase_table(profiler.totals()));
  if (stopped_after_last_epoch || (options.stop_signal && options.stop_signal())) {
    spdlog::info("the stop request arrived after training had completed: the run is complete");
  }
  spdlog::info("done in {} (train {}): accuracy {:.4f} (best {:.4f}){}; wrote {}",
               format_mm_ss(summary.total_seconds), format_mm_ss(train_seconds), summary.accuracy,
               summary.best_accuracy,
               summary.tta_accuracy ? fmt::format(", TTA {:.4f}", *summary.tta_accuracy) : "",
               run_dir.string());
  return summary;
}

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
