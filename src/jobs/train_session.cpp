// One training run in its run directory: see train_session.h.
//
// TrainSession holds the run's parts in the order they are built (set-up, the resume point, the
// recorders, the checkpoint writer and the hooks) and runs its phases one method each, so a new
// feature is a member and a line in the phase it belongs to.
#include "jobs/train_session.h"

#include <optional>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "jobs/train_results.h"
#include "ltfit/config/config_loader.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/eval/evaluator.h"
#include "ltfit/eval/tta.h"
#include "ltfit/jobs/standard_hook_set.h"
#include "ltfit/jobs/train_tensorboard.h"
#include "ltfit/jobs/training_setup.h"
#include "ltfit/run/metrics_writer.h"
#include "ltfit/run/progress.h"
#include "ltfit/run/timing.h"
#include "ltfit/train/best_checkpoint.h"
#include "ltfit/train/checkpoint_writer.h"
#include "ltfit/train/recipe.h"
#include "ltfit/train/standard_hooks.h"
#include "ltfit/train/trainer.h"
#include "ltfit/util/atomic_file.h"
#include "ltfit/util/device.h"
#include "ltfit/util/error.h"
#include "ltfit/util/format.h"
#include "ltfit/util/precision.h"
#include "ltfit/util/stopwatch.h"

namespace ltfit {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Keeps the stats of every finished epoch, so a stop that arrives after the last one (when
// Trainer::fit throws instead of returning them) still leaves the figures for the summary.
class EpochLog : public TrainObserver {
 public:
  void on_epoch_end(const EpochStats& epoch) override { epochs.push_back(epoch); }
  std::vector<EpochStats> epochs;
};

std::string class_list(const std::vector<std::string>& classes) {
  std::string text;
  for (const std::string& c : classes) text += (text.empty() ? "" : ", ") + c;
  return "[" + text + "]";
}

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

// Seeds the run and readies the device; then builds its data, model and optimizer.
TrainingSetup seeded_setup(const Config& config, DistSession& dist) {
  torch::manual_seed(config.run.seed);
  spdlog::info("device: {}", describe_device(dist.device));
  check_precision(config.train.precision, dist.device);
  configure_backends(dist.device, config.run.deterministic);
  return make_training_setup(config, dist.device, /*with_valid=*/true, &dist);
}

class TrainSession {
 public:
  TrainSession(const Config& config, const TrainJobOptions& options, DistSession& dist,
               const fs::path& run_dir, Clock::time_point start)
      : config_(config),
        options_(options),
        dist_(dist),
        run_dir_(run_dir),
        start_(start),
        owner_(dist.is_root()),
        device_(dist.device),
        setup_(seeded_setup(config, dist)),
        profiler_(device_, config.train.profile),
        hooks_(config, HookPurpose::kTrain, setup_.index.classes.size(), dist.group.get()) {}

  RunSummary run() {
    restore_weights();
    open_recorders();
    open_checkpoints();
    add_hooks();
    const std::vector<EpochStats> history = fit();
    RunSummary summary = summarize(history);
    record_skipped(summary, *setup_.train_loader, setup_.valid_loader.get(), dist_);  // the last
    if (!owner_) {                                                                    // collective
      spdlog::info("done: rank 0 evaluates and writes the run directory");
      return summary;
    }
    finish(summary);
    return summary;
  }

 private:
  // --resume: the checkpoint's weights, optimizer and position; --init-from: its weights only.
  void restore_weights() {
    const auto& classes = setup_.index.classes;
    if (options_.resume) {
      resumed_ = resume_from(*options_.resume, setup_.model, *setup_.optimizer, classes);
      if (owner_) {  // before anything records the best again (the checkpoints, summary.json)
        resumed_ =
            check_best_checkpoint((run_dir_ / "checkpoints").string(), *options_.resume,
                                  std::move(resumed_), setup_.model, config_.train.best_monitor);
      }
      start_state_ = {resumed_.position, resumed_.global_step,     resumed_.epochs_done,
                      resumed_.scaler,   resumed_.decode_failures, resumed_.hook_states};
      check_decode_failures(resumed_.decode_failures, setup_.train_loader->size(),
                            *options_.resume);
    }
    if (options_.init_from) init_weights_from(*options_.init_from, setup_.model, classes);
    profiler_.add_earlier(resumed_.phase_seconds);  // timing.json covers every session
  }

  // Rank 0's metrics files, progress bar and TensorBoard events (<run dir>/tb/).
  void open_recorders() {
    if (!owner_) return;
    // Which image went where, with its labels: the split every rank and a resume draw alike.
    write_text_atomic((run_dir_ / "split.csv").string(),
                      split_csv(setup_.index, config_.data.root));
    std::optional<MetricsWriter::ResumeAt> metrics_resume;
    if (options_.resume) metrics_resume = {{resumed_.global_step, resumed_.epochs_done}};
    const bool multi_label = !setup_.thresholds.empty();
    const int top_k = multi_label
                          ? 0
                          : resolve_top_k(config_.eval.top_k,
                                          static_cast<std::int64_t>(setup_.index.classes.size()));
    metrics_.emplace(run_dir_.string(), kLayerGroups, metrics_resume, multi_label, top_k);
    progress_.emplace(static_cast<std::int64_t>(config_.data.batch_size) *
                      config_.train.accumulate);
    if (config_.run.tensorboard) {
      tensorboard_.emplace(run_dir_.string(), kLayerGroups, start_state_.global_step,
                           setup_.index.classes);
    }
  }

  void open_checkpoints() {
    CheckpointMeta run_meta;
    run_meta.config_yaml = to_yaml(config_);
    run_meta.classes = setup_.index.classes;
    train_start_ = Clock::now();
    CheckpointWriterOptions options;
    options.cadence = config_.train.checkpoint;
    options.time_limit_seconds = config_.train.time_limit_seconds;
    options.stop_signal = options_.stop_signal;
    options.prior_train_seconds = resumed_.train_seconds;
    options.best_accuracy = options_.resume ? resumed_.best_accuracy : -1.0;
    options.session_start = start_;
    options.train_start = train_start_;
    options.tta_passes = config_.eval.tta ? tta_passes(config_.eval) : 0;
    options.write = owner_;
    options.best_monitor = config_.train.best_monitor;
    checkpoints_.emplace(owner_ ? (run_dir_ / "checkpoints").string() : std::string(), setup_.model,
                         *setup_.optimizer, run_meta, options);
  }

  void add_hooks() {
    hooks_.add(*checkpoints_);
    hooks_.add(epoch_log_hook_);
    hooks_.add(profiler_hook_);
    if (!owner_) return;
    hooks_.add(progress_hook_.emplace(*progress_));
    hooks_.add(metrics_hook_.emplace(*metrics_));
    if (tensorboard_) hooks_.add(tensorboard_->hook());
  }

  // The recipe's stages from the start state. A stop request before the last epoch and its
  // checkpoint were complete rethrows (naming how to continue); a later one finishes the run.
  std::vector<EpochStats> fit() {
    BatchSource& train = setup_.device_batches ? *setup_.device_batches
                                               : static_cast<BatchSource&>(*setup_.train_loader);
    trainer_.emplace(setup_.model, *setup_.optimizer,
                     tensorboard_ ? tensorboard_->tap(train) : train, setup_.valid_loader.get(),
                     trainer_options(config_, setup_, device_, dist_.group.get()), hooks_.hooks(),
                     &profiler_);
    const std::vector<StagePlan> plan = plan_recipe(config_.train);
    try {
      return trainer_->fit(plan, start_state_);
    } catch (const InterruptedError& e) {
      if (trainer_->state().global_epoch < total_epochs(plan)) {
        if (!owner_) throw;
        write_timing_json((run_dir_ / "timing.json").string(), profiler_, train_seconds(),
                          std::nullopt);
        throw InterruptedError(
            std::string(e.what()) + ": " + checkpoints_->last_path(),
            "continue with: ltfit train --resume auto --run-dir " + run_dir_.string());
      }
    }
    // Every epoch ran and was checkpointed: the request came too late to cut anything short.
    spdlog::warn(
        "stop requested after the last epoch and its checkpoint were complete: finishing the "
        "run's summary (a second signal stops at once)");
    stopped_after_last_epoch_ = true;
    return epoch_log_.epochs;
  }

  // One clock for the summary and the checkpoints: training from the first step (set-up, weight
  // download included, is setup_seconds, counted apart), summed over every session.
  double train_seconds() const { return resumed_.train_seconds + seconds_since(train_start_); }

  RunSummary summarize(const std::vector<EpochStats>& history) const {
    const DatasetIndex& index = setup_.index;
    RunSummary summary;
    summary.run_dir = run_dir_.string();
    summary.arch = config_.model.arch;
    summary.device = describe_device(device_);
    summary.classes = index.classes;
    summary.epochs = trainer_->state().global_epoch;
    // Failed the header check, or failed to decode in any epoch (the last one's too).
    const auto train_files = static_cast<std::int64_t>(index.train.size());
    summary.train_skipped_images =
        train_files - setup_.train_loader->header_readable() +
        static_cast<std::int64_t>(trainer_->state().decode_failures.found.size());
    summary.train_images = train_files - summary.train_skipped_images;
    summary.valid_images = static_cast<std::int64_t>(index.valid.size());
    if (setup_.train_options.cache) {
      summary.data_cache = decoded_image_cache_stats(*setup_.train_options.cache);
    }
    summary.accuracy = history.empty() ? resumed_.accuracy : history.back().accuracy;
    summary.multi_label = !setup_.thresholds.empty();
    summary.thresholds = setup_.thresholds;
    if (!history.empty()) {
      summary.f1_samples = history.back().f1_samples;
      summary.f1_macro = history.back().f1_macro;
      summary.map = history.back().map;
    }
    summary.error_rate = 1.0 - summary.accuracy;
    summary.valid_loss = history.empty() ? resumed_.valid_loss : history.back().valid_loss;
    summary.best_accuracy = checkpoints_->best_accuracy();
    summary.train_seconds = train_seconds();
    summary.setup_seconds = std::chrono::duration<double>(train_start_ - start_).count();
    summary.total_seconds = summary.train_seconds;
    summary.world_size = dist_.world_size();
    summary.backend = dist_.backend_name();
    summary.global_batch = config_.data.batch_size;
    summary.owner = owner_;
    const EmaHook* ema = hooks_.ema();
    if (ema != nullptr && ema->config().validate) summary.weights = "ema";
    if (const EarlyStoppingHook* stopping = hooks_.early_stopping()) {
      summary.stopped_early = stopping->reason();
    }
    return summary;
  }

  // The run is complete (summary.json written): unless train.checkpoint.keep_resumable, its
  // checkpoints shrink to weights (the optimizer state only served a resume). Housekeeping: a
  // failure (a full disk while last.ckpt is rewritten) leaves them as they were and the run
  // complete, with a warning.
  void keep_finished_checkpoints() {
    if (config_.train.checkpoint.keep_resumable) return;
    const std::string dir = (run_dir_ / "checkpoints").string();
    try {
      const KeptWeights kept = keep_weights_only(dir, setup_.model);
      if (kept.freed == 0) return;
      spdlog::info(
          "the run is complete: {} keeps weights only (last.ckpt{}), {:.1f} MB freed; "
          "train.checkpoint.keep_resumable: true keeps the optimizer state",
          dir, kept.last_is_best ? " = best.ckpt: the last epoch was the best" : " and best.ckpt",
          static_cast<double>(kept.freed) / 1e6);
    } catch (const Error& e) {
      spdlog::warn("the run is complete, but its checkpoints could not shrink to weights: {}",
                   e.what());
    }
  }

  // Rank 0: the final TTA and TensorBoard passes, summary.json and timing.json.
  void finish(RunSummary& summary) {
    torch::Tensor confusion;  // the final model's over the validation set, for TensorBoard
    WholeValidation whole(setup_, dist_.active());
    const EmaHook* ema = hooks_.ema();
    if (ema != nullptr && ema->config().validate) {
      ema->apply_to(setup_.model);  // the weights every validation pass judged
      spdlog::info("final passes with the weights' moving average (train.ema.validate)");
    }
    if (config_.eval.tta && setup_.valid_loader) {
      ScopedPhase phase(profiler_, Phase::kTta);
      confusion =
          run_final_tta(config_, setup_.model, whole.get(), setup_.valid_options, device_, summary);
    }
    if (tensorboard_ && (!setup_.thresholds.empty() || !setup_.valid_loader)) {
      tensorboard_.reset();  // multi-label, or no validation: no confusion matrix
    } else if (tensorboard_) {
      if (!confusion.defined()) {
        confusion = validation_confusion(config_, setup_.model, whole.get(), device_);
      }
      tensorboard_->finish(confusion);
      spdlog::info("TensorBoard events: {} ({} bytes)", tensorboard_->writer().path(),
                   tensorboard_->writer().bytes());
    }
    write_summary((run_dir_ / "summary.json").string(), summary);
    write_timing_json((run_dir_ / "timing.json").string(), profiler_, summary.train_seconds,
                      summary.tta_seconds);
    keep_finished_checkpoints();
    spdlog::info("time per phase{}:\n{}", config_.train.profile ? "" : " (device not synchronised)",
                 format_phase_table(profiler_.totals()));
    if (const auto& c = summary.data_cache) {
      spdlog::info(
          "data cache: {} images, {:.1f} of {:.1f} MiB; {} hits, {} misses; {} decodes not kept "
          "(cache full)",
          c->images, c->bytes / 1048576.0, c->capacity / 1048576.0, c->hits, c->misses,
          c->not_kept);
    }
    if (stopped_after_last_epoch_ || (options_.stop_signal && options_.stop_signal())) {
      spdlog::info("the stop request arrived after training had completed: the run is complete");
    }
    if (!setup_.valid_loader) {
      spdlog::info(
          "done in {} (train {}): no validation (data.valid_pct 0), the last epoch's "
          "weights are the result; wrote {}",
          format_mm_ss(summary.total_seconds), format_mm_ss(summary.train_seconds),
          run_dir_.string());
      return;
    }
    spdlog::info("done in {} (train {}): accuracy {:.4f} (best {:.4f}){}; wrote {}",
                 format_mm_ss(summary.total_seconds), format_mm_ss(summary.train_seconds),
                 summary.accuracy, summary.best_accuracy,
                 summary.tta_accuracy ? fmt::format(", TTA {:.4f}", *summary.tta_accuracy) : "",
                 run_dir_.string());
  }

  const Config& config_;
  const TrainJobOptions& options_;
  DistSession& dist_;
  const fs::path run_dir_;
  const Clock::time_point start_;
  const bool owner_;  // rank 0: writes the run directory
  const torch::Device device_;
  TrainingSetup setup_;
  CheckpointMeta resumed_;  // the checkpoint resumed from (defaults for a fresh run)
  TrainState start_state_;
  Profiler profiler_;
  Clock::time_point train_start_;
  std::optional<MetricsWriter> metrics_;
  std::optional<ProgressReporter> progress_;
  std::optional<TrainTensorBoard> tensorboard_;
  std::optional<CheckpointWriter> checkpoints_;
  EpochLog epoch_log_;
  ObserverHook epoch_log_hook_{epoch_log_};
  ProfilerHook profiler_hook_;
  std::optional<ObserverHook> progress_hook_, metrics_hook_;
  StandardHookSet hooks_;
  std::optional<Trainer> trainer_;
  bool stopped_after_last_epoch_ = false;
};

}  // namespace

RunSummary train_in_run_dir(const Config& config, const TrainJobOptions& options, DistSession& dist,
                            const fs::path& run_dir, Clock::time_point start) {
  return TrainSession(config, options, dist, run_dir, start).run();
}

}  // namespace ltfit
