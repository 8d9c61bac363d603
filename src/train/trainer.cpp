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

}  // namespace

Trainer::Trainer(ResNet model, torch::optim::Optimizer& optimizer, Loader& train, Loader& valid,
                 TrainerOptions options, std::vector<TrainObserver*> observers)
    : model_(std::move(model)),
      optimizer_(optimizer),
      train_(train),
      valid_(valid),
      options_(options),
      observers_(std::move(observers)) {}

std::vector<EpochStats> Trainer::fit_one_cycle(const StagePlan& stage) {
  set_body_frozen(model_, stage.frozen);
  const std::int64_t steps_per_epoch = train_.batches_per_epoch();
  if (steps_per_epoch < 1) {
    throw DataError("the training set has fewer images than one batch (data.batch_size)",
                    "lower data.batch_size or add images");
  }
  std::vector<OneCycleSchedule> schedules;
  for (const double lr : stage.group_lrs) {
    const auto& s = stage.shape;
    schedules.push_back({steps_per_epoch * stage.epochs, lr, s.pct_start, s.div, s.div_final,
                         s.moms[0], s.moms[1], s.moms[2]});
  }
  for (auto* o : observers_)
    o->on_stage_begin({stage.name, global_epoch_, stage.epochs, steps_per_epoch});
  loss_avg_ = 0.0;
  loss_n_ = 0;
  std::vector<EpochStats> stats;
  for (int e = 0; e < stage.epochs; ++e) {
    const auto start = Clock::now();
    const EpochTrain trained = train_epoch(schedules, e * steps_per_epoch);
    for (auto* o : observers_) o->on_validation_begin(valid_.batches_per_epoch());
    const EvalResult valid = evaluate(model_, valid_, {options_.device, options_.channels_last});
    EpochStats epoch{
        global_epoch_,        stage.name,
        trained.smooth_loss,  valid.loss,
        valid.accuracy,       1.0 - valid.accuracy,
        seconds_since(start), static_cast<double>(trained.images) / std::max(trained.seconds, 1e-9),
        trained.data_wait};
    stats.push_back(epoch);
    for (auto* o : observers_) o->on_epoch_end(epoch);
    ++global_epoch_;
  }
  return stats;
}

Trainer::EpochTrain Trainer::train_epoch(const std::vector<OneCycleSchedule>& schedules,
                                         std::int64_t stage_step0) {
  EpochTrain result;
  const auto start = Clock::now();
  model_->train();
  train_.start_epoch(global_epoch_);
  std::int64_t step = stage_step0;
  std::vector<double> lrs(schedules.size());
  for (;;) {
    const auto wait_start = Clock::now();
    std::optional<Batch> batch = train_.next();
    result.data_wait += seconds_since(wait_start);
    if (!batch) break;
    for (std::size_t g = 0; g < schedules.size(); ++g) lrs[g] = lr_at(schedules[g], step);
    const double momentum = momentum_at(schedules.front(), step);
    set_hyper_parameters(optimizer_, lrs, momentum);
    const double loss = train_step(batch->images, batch->labels);
    loss_avg_ = kLossSmoothing * loss_avg_ + (1.0 - kLossSmoothing) * loss;
    ++loss_n_;
    result.images += batch->labels.size(0);
    for (auto* o : observers_) o->on_step({global_step_, global_epoch_, lrs, momentum, loss, 1.0});
    ++global_step_;
    ++step;
  }
  if (result.images == 0) {
    throw DataError("no training image could be read in epoch " + std::to_string(global_epoch_),
                    "check the images under data.root (the log names the unreadable ones)");
  }
  result.smooth_loss = loss_avg_ / (1.0 - std::pow(kLossSmoothing, static_cast<double>(loss_n_)));
  result.seconds = seconds_since(start);
  return result;
}

double Trainer::train_step(const torch::Tensor& images, const torch::Tensor& labels) {
  const torch::Tensor x = normalize_images(images, options_.device, options_.channels_last);
  const torch::Tensor y = labels.to(options_.device, /*non_blocking=*/true);
  optimizer_.zero_grad(/*set_to_none=*/true);
  const torch::Tensor loss = torch::nn::functional::cross_entropy(model_->forward(x), y);
  const double value = loss.item<double>();
  if (!std::isfinite(value)) {
    throw RuntimeError("training loss became " + std::to_string(value) + " at step " +
                           std::to_string(global_step_),
                       "lower train.lr; the last good checkpoint is kept");
  }
  loss.backward();
  optimizer_.step();
  return value;
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
