// The Trainer's losses: a batch's forward and loss (multi-label: fastai's BCEWithLogitsLossFlat),
// the smoothed training loss, and the losses kept on the device and read per interval
// (TrainerOptions::loss_read_interval). The rest of the loop is in trainer.cpp.
#include "ltfit/train/trainer.h"

#include <cmath>
#include <string>

#include <torch/nn/functional/loss.h>

namespace ltfit {

torch::Tensor Trainer::batch_loss(const torch::Tensor& output, const torch::Tensor& target) const {
  namespace F = torch::nn::functional;
  // Class indices or a [N,K] distribution (PyTorch's cross_entropy takes both); fp32 under
  // autocast. Label smoothing mixes either with the uniform distribution; class weights scale
  // each class's term (with indices the mean is over the batch's weights, torch's rule).
  if (!options_.thresholds.empty()) {
    return multi_label_loss(output, target, options_.train.label_smoothing, options_.pos_weight);
  }
  auto options = F::CrossEntropyFuncOptions().label_smoothing(options_.train.label_smoothing);
  if (options_.class_weights.defined()) options.weight(options_.class_weights);
  return F::cross_entropy(output, target, options);
}

torch::Tensor multi_label_loss(const torch::Tensor& logits, const torch::Tensor& targets,
                               double eps, const torch::Tensor& pos_weight) {
  namespace F = torch::nn::functional;
  torch::Tensor y = targets.to(torch::kFloat32);
  if (eps > 0) y = y * (1.0 - eps) + eps / static_cast<double>(logits.size(1));
  auto bce = F::BinaryCrossEntropyWithLogitsFuncOptions();
  if (pos_weight.defined()) bce.pos_weight(pos_weight);
  return F::binary_cross_entropy_with_logits(logits.to(torch::kFloat32), y, bce);
}

void add_to_smoothed_loss(TrainPosition& at, double loss) {
  at.loss_avg = kLossSmoothing * at.loss_avg + (1.0 - kLossSmoothing) * loss;
  ++at.loss_count;
}

// The batch's output and loss into the context (a zero loss, no output, for an empty slice).
void Trainer::forward_and_loss(bool empty) {
  TrainContext& c = ctx_;
  if (empty) {
    c.output = torch::Tensor();
    c.loss = torch::zeros({}, torch::TensorOptions().device(options_.device));
  } else {
    ScopedPhase phase(*profiler_, Phase::kForward);
    AutocastGuard autocast(options_.device.type(), c.amp_dtype);
    c.output = model_->forward(c.images);
    c.loss = batch_loss(c.output, c.targets.defined() ? c.targets : c.labels);
  }
  c.backward_loss = c.loss;
}

void Trainer::close_step(double cut_short) {
  ctx_.read_steps.clear();
  const SyncFreeStep* step = ctx_.sync_free_step;
  const bool device_scale = step != nullptr && scaler_.enabled();
  step_losses_->end_step(state_.global_step - 1, cut_short,
                         device_scale ? step->scale() : torch::Tensor(), scaler_.scale_value());
  const bool due =
      static_cast<std::int64_t>(step_losses_->pending()) >= options_.loss_read_interval;
  // A checkpoint holds the position's smoothed loss (the epoch's end reads in train_epoch).
  if (due || ctx_.vote_save || ctx_.vote_stop) read_losses();
}

void Trainer::read_losses() {
  const DeviceStepLosses::Reading reading = step_losses_->read();
  reading.apply(state_.position);
  // The loss check the hook makes after each batch when the loss is read there: the first
  // non-finite step stops the run, before any save (an fp16 overflow only skips its step).
  if (!scaler_.enabled()) {
    for (const StepLoss& s : reading.steps) {
      if (!std::isfinite(s.loss)) throw non_finite_loss_error(s.loss, s.step);
    }
  }
  ctx_.read_steps.insert(ctx_.read_steps.end(), reading.steps.begin(), reading.steps.end());
}

}  // namespace ltfit
