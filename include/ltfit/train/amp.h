// Mixed precision: the gradient scaler, the autocast guard and the backend switches.
//
// GradScaler follows torch.amp.GradScaler (dynamic loss scaling for fp16): the loss is multiplied
// by a scale before backward, gradients are divided by it before the optimizer step, a step with
// an inf/NaN gradient is skipped and the scale halved, and after `growth_interval` clean steps
// the scale doubles. It is a no-op (scale 1, identity) unless enabled, i.e. for fp32 and bf16.
// AutocastGuard runs a scope under autocast like torch.autocast. Neither is thread-safe; autocast
// state is per thread, so enter the guard on the thread that runs the forward pass.
#pragma once

#include <cstdint>
#include <string>

#include <torch/optim/optimizer.h>
#include <torch/types.h>

namespace ltfit {

// "fp32" -> kFloat, "fp16" -> kHalf, "bf16" -> kBFloat16; anything else throws ConfigError.
torch::Dtype precision_dtype(const std::string& precision);

// Throws ConfigError (train.precision) when `precision` cannot run on `device`: fp16 needs a
// CUDA device; bf16 on CUDA needs compute capability >= 8.0. fp32 always passes.
void check_precision(const std::string& precision, const torch::Device& device);

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

// RAII: autocast to `dtype` on `device_type` for the guard's lifetime, as torch.autocast does;
// restores the previous enabled flag and dtype on exit and clears the cast cache when leaving
// the outermost autocast scope. Unlike torch.autocast it also clears the cache on entering and
// leaving a scope nested in one of another dtype (the cache is keyed by tensor, not dtype, so an
// fp16 weight copy would otherwise reach a bf16 matmul). kFloat (fp32) makes it a no-op.
class AutocastGuard {
 public:
  AutocastGuard(torch::DeviceType device_type, torch::Dtype dtype);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  // True when this scope is nested in an enabled scope of another dtype.
  bool switches_dtype() const { return prev_enabled_ && prev_dtype_ != dtype_; }

  bool active_ = false;
  torch::DeviceType device_type_;
  torch::Dtype dtype_;
  bool prev_enabled_ = false;
  torch::Dtype prev_dtype_ = torch::kFloat;
};

// Sets the global backend switches for training on `device` and logs one line saying what was
// set: cuDNN benchmark (off when deterministic), TF32 matmul/cuDNN on GPUs with compute
// capability >= 8.0, and deterministic algorithms (errors on nondeterministic ops) when asked.
void configure_backends(const torch::Device& device, bool deterministic);

}  // namespace ltfit
