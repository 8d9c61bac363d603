// The optimizer step with its state in tensors on the parameters' device and no host read: the
// part of a training step a CUDA graph can capture and replay (train.cuda_graphs, on a GPU). The
// learning rate of each parameter group and the momentum are device tensors the schedule fills
// before each step (an asynchronous fill on a GPU, no read); the fp16 gradient scaler's scale,
// growth tracker and found-inf flag are device tensors too, updated by ATen's own
// _amp_update_scale_ kernel; a step whose gradients hold an inf or NaN changes no parameter,
// moment or step count, gated arithmetically instead of by a branch on the host; gradient
// clipping computes its coefficient on the device. The arithmetic is today's step's (FusedAdamW,
// FusedSGD, GradScaler, torch's clip_grad_norm_), checked equal to it on the CPU
// (tests/train/sync_free_step_test.cpp); only the order of float operations differs.
//
// It drives ltfit's FusedAdamW or FusedSGD (make_optimizer's with train.optimizer.fused): their
// parameter groups, options (weight decay, eps, beta2) and LibTorch states (the moments and
// momentum buffers are updated in place), so that a checkpoint after sync_state() is today's.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include <optional>

#include "ltfit/train/amp.h"
#include "ltfit/train/hooks.h"

namespace ltfit {

class SyncFreeStep {
 public:
  // `optimizer`: a FusedAdamW or FusedSGD (std::invalid_argument otherwise); `scaler`: the fp16
  // scaler's options (enabled false: gradients are used as they are); `max_grad_norm` > 0 clips
  // the gradients' total norm first (train.clip_grad_norm), 0 does not.
  SyncFreeStep(torch::optim::Optimizer& optimizer, const GradScalerOptions& scaler,
               double max_grad_norm = 0.0);

  // The schedule's values for the next step: one LR per layer group (the optimizer's parameter
  // groups split evenly among them, as set_hyper_parameters splits them) and the momentum
  // (AdamW's beta1, SGD's momentum). Fills device tensors; reads nothing.
  void set_hyper_parameters(const std::vector<double>& lrs, double momentum);
  // The same from the optimizer's options, as a schedule hook left them (each parameter group's
  // LR, the first group's momentum). Fills device tensors; reads nothing from the device.
  void take_hyper_parameters();

  // loss (fp32 at least) times the scale: a device op.
  torch::Tensor scale_loss(const torch::Tensor& loss) const;

  // Unscales the gradients and checks them for inf/NaN, clips them, updates every parameter
  // with a gradient and its state (nothing when one was non-finite), then the scale. No read.
  void step();

  // Host views, each one device read: for checkpoints, logs and tests.
  GradScalerState scaler_state() const;
  // The scale and growth tracker to go on from (a resumed run's): device fills.
  void set_scaler_state(const GradScalerState& state);
  // The total gradient norm the next steps clip to (0: none), as the constructor's.
  void set_max_grad_norm(double max_grad_norm);
  bool last_step_skipped() const;
  // The loss scale as a device scalar (float32), updated in place by each step: for a reader
  // that copies it without a host read (DeviceStepLosses).
  const torch::Tensor& scale() const { return scale_; }
  // Writes the step counts back into the optimizer's LibTorch states (AdamW's int64 `step`), so
  // that its state dict and a checkpoint are what today's step leaves. One device read.
  void sync_state();

 private:
  struct Param {
    torch::Tensor param, step;  // step: float64 count on the device
    std::size_t group = 0;
  };
  void update_adamw(const std::vector<Param*>& params, std::size_t group);
  void update_sgd(const std::vector<Param*>& params, std::size_t group);
  std::vector<torch::Tensor> unscale_and_clip();

  torch::optim::Optimizer& optimizer_;
  bool adamw_ = false;
  GradScalerOptions scaler_options_;
  double max_grad_norm_ = 0.0;
  torch::Device device_;
  std::vector<torch::Tensor> lrs_;                         // one float32 scalar per parameter group
  torch::Tensor momentum_;                                 // float32 scalar
  torch::Tensor scale_, growth_tracker_, found_inf_, ok_;  // float32, int32, float32, float32
  std::vector<Param> params_;
};

// The Trainer's hook for TrainerOptions::sync_free_step, in LossScalerHook's place: builds the
// step at fit_begin from the optimizer (its states as loaded, so a resumed run goes on) and the
// TrainState's scaler, scales each loss for backward, fills the step's hyper-parameters from the
// optimizer's options at before_step, and writes its state back (sync_state, a device read)
// before anything saves: at after_step when a save or stop was voted, at epoch_end and fit_end.
// With the scaler on, the scale is read (one read) into the TrainState and the host GradScaler
// that observers report: after each step, or with the loss read per interval
// (TrainContext::loss_deferred) only before a save (observers then report the steps' scales as
// DeviceStepLosses read them). ClipGradHook gives the step its norm (it clips inside).
class SyncFreeStepHook : public Hook {
 public:
  explicit SyncFreeStepHook(const GradScalerOptions& scaler) : scaler_(scaler) {}
  int order() const override { return hook_order::kLossScaler; }
  void fit_begin(TrainContext& ctx) override;
  void after_loss(TrainContext& ctx) override;
  void before_step(TrainContext& ctx) override;
  void after_step(TrainContext& ctx) override;
  void epoch_end(TrainContext& ctx) override;
  void fit_end(TrainContext& ctx) override;

 private:
  void mirror_scaler(TrainContext& ctx);  // the device scale into the TrainState and host scaler
  GradScalerOptions scaler_;
  std::optional<SyncFreeStep> step_;
};

}  // namespace ltfit
