// Mixed-precision training: the gradient scaler. (The precision names, the autocast guard and
// the backend switches, which evaluation needs too, are in util/precision.h.)
//
// GradScaler follows torch.amp.GradScaler (dynamic loss scaling for fp16): the loss is multiplied
// by a scale before backward, gradients are divided by it before the optimizer step, a step with
// an inf/NaN gradient is skipped and the scale halved, and after `growth_interval` clean steps
// the scale doubles. It is a no-op (scale 1, identity) unless enabled, i.e. for fp32 and bf16.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include "ltfit/util/precision.h"

namespace ltfit {

struct GradScalerOptions {
  bool enabled = true;                  // false: identity (fp32/bf16 training)
  double init_scale = 65536.0;          // 2^16, PyTorch's default
  double growth_factor = 2.0;           // scale *= this after growth_interval clean steps
  double backoff_factor = 0.5;          // scale *= this after a step with inf/NaN gradients
  std::int64_t growth_interval = 2000;  // consecutive clean steps before growing the scale
};

// What a checkpoint must keep to resume scaling exactly.
struct GradScalerState {
  double scale = 65536.0;           // current loss scale
  std::int64_t growth_tracker = 0;  // clean steps since the last growth or backoff
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});

  bool enabled() const { return options_.enabled; }

  // loss * scale (fp32); returns `loss` itself when disabled.
  torch::Tensor scale(const torch::Tensor& loss);

  // Divides every defined gradient of `optimizer` in place by the scale and returns whether any
  // was inf/NaN (one device sync). A second call before update() returns the same answer without
  // touching the gradients again. Disabled: returns false, changes nothing.
  bool unscale(torch::optim::Optimizer& optimizer);

  // Unscales if not done yet, then runs optimizer.step() unless a gradient was non-finite;
  // returns whether it stepped. Call at most once per update().
  bool step(torch::optim::Optimizer& optimizer);

  // Adjusts the scale after step(): backoff on overflow (tracker reset), growth after
  // growth_interval consecutive clean steps. No-op when disabled.
  void update();

  // The current scale (1 when disabled); no device sync.
  double scale_value() const { return options_.enabled ? state_.scale : 1.0; }

  GradScalerState state() const { return state_; }
  void set_state(const GradScalerState& state);

 private:
  enum class Stage { kReady, kUnscaled, kStepped };

  GradScalerOptions options_;
  GradScalerState state_;  // kept on the host: the only sync per step is reading found_inf
  Stage stage_ = Stage::kReady;
  bool found_inf_ = false;  // valid once stage_ != kReady
};

}  // namespace ltfit
