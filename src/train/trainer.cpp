#include "ltfit/train/trainer.h"

#include <chrono>
#include <cmath>

#include <torch/nn/functional/loss.h>

#include "ltfit/data/loader.h"
#include "ltfit/eval/evaluator.h"
#include "ltfit/train/optimizer.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

constexpr double kLossSmoothing = 0.98;  // fastai's SmoothenValue beta

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<OneCycleSchedule> stage_schedules(const StagePlan& stage,
                                              std::int64_t steps_per_epoch) {
  std::vector<OneCycleSchedule> schedules;
  const auto& s = stage.shape;
  for (const double lr : stage.group_lrs) {
    schedules.push_back({steps_per_epoch * stage.epochs, lr, s.pct_start, s.div, s.div_final,
                         s.moms[0], s.moms[1], s.moms[2]});
  }
  return schedules;
}

}  // namespace

Trainer::Trainer(ResNet model, torch::optim::Optimizer& optimizer, Loader& train, Loader& valid,
                 TrainerOptions options, std::vector<TrainObserver*> observers,
                 TrainControl* control, Profiler* profiler)
    : model_(std::move(model)),
      optimizer_(optimizer),
      train_(train),
      valid_(valid),
      options_(options),
      observers_(std::move(observers)),
      control_(control),
      profiler_(profiler),
      amp_dtype_(precision_dtype(options.precision)),
      scaler_(GradScalerOptions{.enabled = amp_dtype_ == torch::kHalf}) {
  if (profiler_ == nullptr) profiler_ = &own_profiler_.emplace(options_.device, /*sync=*/false);
}

std::vector<EpochStats> Trainer::fit(const std::vector<StagePlan>& plan, const TrainState& start) {
  state_ = start;
  scaler_.set_state(start.scaler);
  std::vector<EpochStats> stats;
  for (int s = start.position.stage; s < static_cast<int>(plan.size()); ++s) {
    if (s != start.position.stage) state_.position = {s, 0, 0, 0.0, 0};
    run_stage(plan[static_cast<std::size_t>(s)], stats);
  }
  return stats;
}

std::vector<EpochStats> Trainer::fit_one_cycle(const StagePlan& stage) {
  state_.position = {};
  std::vector<EpochStats> stats;
  run_stage(stage, stats);
  return stats;
}

void Trainer::run_stage(const StagePlan& stage, std::vector<EpochStats>& stats) {
  TrainPosition& at = state_.position;
  if (at.epoch_in_stage >= stage.epochs) return;  // resumed at this stage's very end
  set_body_frozen(model_, stage.frozen);
  const std::int64_t steps_per_epoch = train_.batches_per_epoch();
  if (steps_per_epoch < 1) {
    throw DataError("the training set has fewer images than one batch (data.batch_size)",
                    "lower data.batch_size or add images");
  }
  const std::vector<OneCycleSchedule> schedules = stage_schedules(stage, steps_per_epoch);
  for (auto* o : observers_) {
    o->on_stage_begin(
        {stage.name, state_.global_epoch - at.epoch_in_stage, stage.epochs, steps_per_epoch});
  }
  while (at.epoch_in_stage < stage.epochs) {
    const auto start = Clock::now();
    profiler_->begin_epoch(state_.global_epoch);
    const EpochTrain trained = train_epoch(schedules, steps_per_epoch);
    for (auto* o : observers_) o->on_validation_begin(valid_.batches_per_epoch());
    EvalResult valid;
    {
      ScopedPhase phase(*profiler_, Phase::kValidation);
      valid =
          evaluate(model_, valid_, {options_.device, options_.channels_last, options_.precision});
    }
    const EpochStats epoch{
        state_.global_epoch,  stage.name,
        trained.smooth_loss,  valid.loss,
        valid.accuracy,       1.0 - valid.accuracy,
        seconds_since(start), static_cast<double>(trained.images) / std::max(trained.seconds, 1e-9),
        trained.data_wait};
    stats.push_back(epoch);
    ++state_.global_epoch;
    ++at.epoch_in_stage;
    at.batch_in_epoch = 0;
    for (auto* o : observers_) o->on_epoch_end(epoch);
    if (control_ != nullptr) {
      ScopedPhase phase(*profiler_, Phase::kCheckpoint);
      control_->save(state_, &epoch, "epoch");
    }
    profiler_->end_epoch(trained.images);
    if (control_ != nullptr && control_->stop_requested()) {
      throw InterruptedError("training stopped after epoch " + std::to_string(epoch.epoch) +
                             "; a checkpoint was written");
    }
  }
}

Trainer::EpochTrain Trainer::train_epoch(const std::vector<OneCycleSchedule>& schedules,
                                         std::int64_t steps_per_epoch) {
  EpochTrain result;
  const auto start = Clock::now();
  TrainPosition& at = state_.position;
  const std::int64_t first_batch = at.batch_in_epoch;
  const std::int64_t stage_step0 = at.epoch_in_stage * steps_per_epoch;
  model_->train();
  train_.start_epoch(state_.global_epoch, first_batch);
  std::vector<double> lrs(schedules.size());
  for (;;) {
    const auto wait_start = Clock::now();
    std::optional<Batch> batch;
    {
      ScopedPhase phase(*profiler_, Phase::kDataWait);
      batch = train_.next();
    }
    result.data_wait += seconds_since(wait_start);
    if (!batch) break;
    const std::int64_t step = stage_step0 + at.batch_in_epoch;
    for (std::size_t g = 0; g < schedules.size(); ++g) lrs[g] = lr_at(schedules[g], step);
    const double momentum = momentum_at(schedules.front(), step);
    set_hyper_parameters(optimizer_, lrs, momentum);
    const double loss = train_step(batch->images, batch->labels);
    at.loss_avg = kLossSmoothing * at.loss_avg + (1.0 - kLossSmoothing) * loss;
    ++at.loss_count;
    result.images += batch->labels.size(0);
    const StepStats stats{state_.global_step,   state_.global_epoch, lrs, momentum, loss,
                          scaler_.scale_value()};
    for (auto* o : observers_) o->on_step(stats);
    ++state_.global_step;
    ++at.batch_in_epoch;
    after_step();
  }
  if (result.images == 0 && first_batch == 0) {
    throw DataError(
        "no training image could be read in epoch " + std::to_string(state_.global_epoch),
        "check the images under data.root (the log names the unreadable ones)");
  }
  const double count = static_cast<double>(at.loss_count);
  result.smooth_loss = count > 0 ? at.loss_avg / (1.0 - std::pow(kLossSmoothing, count)) : 0.0;
  result.seconds = seconds_since(start);
  return result;
}

// Under fp16 a non-finite loss is an overflow the loss scaler handles (the step is skipped and
// the scale halved); in fp32 and bf16 it means divergence and stops the run.
double Trainer::train_step(const torch::Tensor& images, const torch::Tensor& labels) {
  torch::Tensor x, y, loss;
  {
    ScopedPhase phase(*profiler_, Phase::kHostToDevice);
    x = normalize_images(images, options_.device, options_.channels_last);
    y = labels.to(options_.device, /*non_blocking=*/true);
  }
  optimizer_.zero_grad(/*set_to_none=*/true);
  {
    ScopedPhase phase(*profiler_, Phase::kForward);
    AutocastGuard autocast(options_.device.type(), amp_dtype_);
    loss = torch::nn::functional::cross_entropy(model_->forward(x), y);  // fp32 under autocast
  }
  const double value = loss.item<double>();
  if (!std::isfinite(value) && !scaler_.enabled()) {
    throw RuntimeError("training loss became " + std::to_string(value) + " at step " +
                           std::to_string(state_.global_step),
                       "lower train.lr; the last good checkpoint is kept");
  }
  {
    ScopedPhase phase(*profiler_, Phase::kBackward);
    scaler_.scale(loss).backward();
  }
  {
    ScopedPhase phase(*profiler_, Phase::kOptimizer);
    scaler_.step(optimizer_);
    scaler_.update();
  }
  state_.scaler = scaler_.state();
  return value;
}

void Trainer::after_step() {
  if (control_ == nullptr) return;
  const bool stop = control_->stop_requested();
  if (stop || control_->checkpoint_due()) {
    ScopedPhase phase(*profiler_, Phase::kCheckpoint);
    control_->save(state_, nullptr, stop ? "stop" : "periodic");
  }
  if (stop) {
    throw InterruptedError("training stopped at step " + std::to_string(state_.global_step) +
                           " (epoch " + std::to_string(state_.global_epoch) +
                           "); a checkpoint was written");
  }
}

void set_body_frozen(ResNet& model, bool frozen) {
  auto groups = model->layer_group_parameters();
  for (std::size_t g = 0; g + 1 < groups.size(); ++g) {
    for (auto& p : groups[g]) p.set_requires_grad(!frozen);
  }
  // BatchNorm layers train even in a frozen body (fastai's train_bn).
  for (auto& module : model->modules(/*include_self=*/false)) {
    if (auto* bn = module->as<torch::nn::BatchNorm2d>()) {
      bn->weight.set_requires_grad(true);
      bn->bias.set_requires_grad(true);
    }
  }
}

}  // namespace ltfit
