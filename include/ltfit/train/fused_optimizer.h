// AdamW and SGD whose step runs ATen's fused multi-tensor kernels (_fused_adamw_, _fused_sgd_,
// on CPU and CUDA): one kernel per parameter group and (device, dtype) instead of LibTorch's loop
// of about ten ops per parameter. The arithmetic is torch.optim.AdamW(fused=True)'s and
// SGD(fused=True)'s; the options and the per-parameter state are LibTorch's AdamW's and SGD's
// (AdamWParamState, SGDParamState), so checkpoints, set_hyper_parameters and the state dict are
// those of the unfused optimizers.
//
// AdamW's step count: LibTorch keeps an int64 per parameter, the fused kernel a float32 tensor
// on the parameter's device. Both are kept, in step: the tensor is rebuilt from the int64 when
// they differ (a state loaded from a checkpoint). Gradients and states in another memory format
// than their parameter are laid out as it is first (the kernels pair elements by memory order).
// Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <torch/types.h>

namespace ltfit {

// The fp16 gradient scaler's view of a step, as torch.amp hands it to a fused optimizer: the
// kernel divides each gradient by `grad_scale` (float32, one element, on the parameters' device)
// and leaves parameters and state unchanged when `found_inf` (float32, one element) is non-zero.
struct ScaledStep {
  torch::Tensor grad_scale;
  torch::Tensor found_inf;
};

class FusedAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  // As AdamW::step (no closure allowed); parameters without a gradient are left out.
  torch::Tensor step(LossClosure closure = nullptr) override;
  // The step with the scaler's unscaling folded in. Reads found_inf once (a device sync) to keep
  // the int64 step counts.
  void step(const ScaledStep& scaled);

 private:
  struct StepCount {
    torch::Tensor tensor;  // float32 scalar on the parameter's device, as the kernel wants it
    std::int64_t host = -1;
  };
  void run(const std::optional<ScaledStep>& scaled);
  torch::optim::AdamWParamState& state_of(const torch::Tensor& p, bool amsgrad);
  StepCount& step_count(const torch::Tensor& p, const torch::optim::AdamWParamState& state);
  std::unordered_map<const void*, StepCount> steps_;
};

class FusedSGD : public torch::optim::SGD {
 public:
  using torch::optim::SGD::SGD;
  torch::Tensor step(LossClosure closure = nullptr) override;
  void step(const ScaledStep& scaled);

 private:
  void run(const std::optional<ScaledStep>& scaled);
};

}  // namespace ltfit
