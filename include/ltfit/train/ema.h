// An exponential moving average of the weights, as timm's ModelEmaV3 keeps it
// (timm/utils/model_ema.py, timm 1.0.31), updated after every optimizer step as timm's train.py
// does (`model_ema.update(model, step=num_updates)`).
//
// Every entry of the model's state (parameters and buffers) is averaged: a floating-point one as
// ema.lerp_(value, 1 − decay), any other (BatchNorm's num_batches_tracked) copied. The decay of
// update t (t = 1, 2, ...: the optimizer steps so far) is ModelEmaV3.get_decay(t): 0 for the
// first update (the average starts as a copy), then `decay`, or with warm-up
// min(decay, 1 − (1 + (t − 1))^(−2/3)). A step skipped by the fp16 loss scaler is an update too,
// as in timm.
//
// With `validate`, every validation pass (and so best.ckpt's choice) evaluates the averaged
// weights: they are swapped into the model for the pass and the trained weights swapped back
// after it, before the checkpoint is written. Every checkpoint keeps the average as the hook
// state "ema"; a resumed run continues it exactly. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "ltfit/config/config.h"
#include "ltfit/train/hooks.h"

namespace ltfit {

// ModelEmaV3.get_decay(step) for update number `step` (1-based).
double ema_decay(const EmaConfig& config, std::int64_t step);

// One update: each floating-point ema entry lerps towards the model's by 1 − decay, any other
// is copied. The two lists are in the same order.
void ema_update(const std::vector<torch::Tensor>& ema, const std::vector<torch::Tensor>& model,
                double decay);

// A model's state as named tensors (parameters, then buffers), the order ema_update pairs them
// in.
std::vector<std::pair<std::string, torch::Tensor>> model_state(Classifier& model);

// Copies a checkpoint's "ema" state into `model`, entry by entry by name. CheckpointError (exit
// 4) when an entry is missing or of another shape or type.
void apply_ema_state(Classifier& model, const HookState& state);

// The checkpoint's "ema" hook state, or null when it has none.
const HookState* find_ema_state(const std::vector<HookState>& states);

class EmaHook : public Hook {
 public:
  explicit EmaHook(EmaConfig config);
  int order() const override { return hook_order::kEma; }
  void fit_begin(TrainContext& ctx) override;
  void after_step(TrainContext& ctx) override;
  void validation_begin(TrainContext& ctx) override;
  void validation_end(TrainContext& ctx) override;
  std::string state_name() const override { return "ema"; }
  HookState save_state() const override;
  void load_state(const HookState& state) override;

  // Copies the averaged weights into `model` (the run's final passes, with `validate`).
  void apply_to(Classifier& model) const;
  const EmaConfig& config() const { return config_; }

 private:
  EmaConfig config_;
  std::vector<std::string> names_;
  std::vector<torch::Tensor> weights_;  // the model's own tensors, in names_' order (fit_begin)
  std::vector<torch::Tensor> ema_;      // the average, on the model's device
  std::vector<torch::Tensor> backup_;   // the trained weights during a validation pass
};

}  // namespace ltfit
