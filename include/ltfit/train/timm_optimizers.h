// timm's LAMB (timm/optim/lamb.py) and RMSpropTF (timm/optim/rmsprop_tf.py) as LibTorch
// optimizers, op for op the arithmetic of timm 1.0.x's single-tensor path (the one timm runs on
// the CPU; its CUDA foreach path reorders the same formulas, within 3e-7 of it over 100 steps):
// tests/train/timm_optimizers_test.cpp checks 100 steps against timm within 1e-6.
//
// Both are torch::optim::Optimizer subclasses with their own options and per-parameter state, so
// param_groups(), set_lr() and torch::save / torch::load of the optimizer work as for LibTorch's
// AdamW. Their constructors keep each group's own options (LibTorch's base constructor keeps them
// for its own optimizer types only); add_param_group after construction would not, and ltfit
// does not call it. Not implemented (timm options that ltfit does not use): caution, foreach,
// corrected_weight_decay. Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#include <torch/arg.h>
#include <torch/optim/optimizer.h>
#include <torch/types.h>

namespace ltfit {

// One parameter group's LAMB hyper-parameters (timm's Lamb keyword arguments
// and defaults).
struct LambOptions : public torch::optim::OptimizerCloneableOptions<LambOptions> {
  LambOptions(double lr = 1e-3);  // NOLINT: LibTorch's loader builds options
                                  // from a number
  using betas_t = std::tuple<double, double>;
  TORCH_ARG(double, lr) = 1e-3;
  // Divide the moments by 1 - beta^step (Adam's bias correction).
  TORCH_ARG(bool, bias_correction) = true;
  // (beta1, beta2): the decay of the gradient's and the squared gradient's
  // averages. beta1 is what fastai's one-cycle moves as the momentum.
  TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  // Added to sqrt(v_hat) in the denominator.
  TORCH_ARG(double, eps) = 1e-6;
  // L2 decay added to the update before the trust ratio (decoupled_decay: p *=
  // 1 - lr * wd first instead). A group with weight_decay 0 also skips the
  // trust ratio (unless always_adapt).
  TORCH_ARG(double, weight_decay) = 0.01;
  // m = beta1 m + (1 - beta1) g; false: m = beta1 m + g.
  TORCH_ARG(bool, grad_averaging) = true;
  // Every gradient is divided by max(1, ||all gradients|| / max_grad_norm) (one
  // global norm over all groups). Only the optimizer's defaults' value counts,
  // as timm reads self.defaults; none: no clipping.
  TORCH_ARG(std::optional<double>, max_grad_norm) = 1.0;
  // LAMBC: the trust ratio is clipped at 1.
  TORCH_ARG(bool, trust_clip) = false;
  // Apply the trust ratio to groups with weight_decay 0 too.
  TORCH_ARG(bool, always_adapt) = false;
  // Decoupled weight decay (p *= 1 - lr * wd) instead of the L2 term in the
  // update.
  TORCH_ARG(bool, decoupled_decay) = false;
  // The group's step count (timm's param_group["step"]): advanced by every
  // step() call, also when none of the group's parameters has a gradient (a
  // frozen layer group), and used for the bias correction of all of its
  // parameters. State, not a hyper-parameter; saved with the group.
  TORCH_ARG(std::int64_t, step) = 0;

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
  double get_lr() const override;
  void set_lr(double lr) override;
};

// One parameter's LAMB state: the moments, like the parameter.
struct LambParamState : public torch::optim::OptimizerCloneableParamState<LambParamState> {
  TORCH_ARG(torch::Tensor, exp_avg);
  TORCH_ARG(torch::Tensor, exp_avg_sq);

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
};

// Layer-wise Adaptive Moments (You et al. 2019) as NVIDIA's FusedLAMB and
// timm's Lamb: an Adam update u (plus wd * p) scaled per parameter by the trust
// ratio ||p|| / ||u|| (1 where either norm is 0), after global gradient-norm
// clipping. Gradients are not changed in place.
class Lamb : public torch::optim::Optimizer {
 public:
  explicit Lamb(const std::vector<torch::optim::OptimizerParamGroup>& param_groups,
                LambOptions defaults = {});
  explicit Lamb(std::vector<torch::Tensor> params, LambOptions defaults = {})
      : Lamb({torch::optim::OptimizerParamGroup(std::move(params))}, std::move(defaults)) {}

  // Parameters without a gradient are left out (their group's step still
  // advances).
  torch::Tensor step(LossClosure closure = nullptr) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

 private:
  torch::Tensor global_clip() const;
  void step_group(torch::optim::OptimizerParamGroup& group, const torch::Tensor& clip);
};

// One parameter group's RMSpropTF hyper-parameters (timm's RMSpropTF keyword
// arguments; momentum 0.9 as timm's create_optimizer gives every optimizer that
// has one).
struct RMSpropTFOptions : public torch::optim::OptimizerCloneableOptions<RMSpropTFOptions> {
  RMSpropTFOptions(double lr = 1e-2);  // NOLINT: LibTorch's loader builds
                                       // options from a number
  TORCH_ARG(double, lr) = 1e-2;
  // Decay of the squared-gradient average: v += (1 - alpha) (g^2 - v).
  TORCH_ARG(double, alpha) = 0.9;
  // Added inside the square root (TensorFlow's placement): g / sqrt(v + eps).
  // timm's EfficientNet recipe uses 1e-3.
  TORCH_ARG(double, eps) = 1e-10;
  // L2 decay added to the gradient (decoupled_decay: p *= 1 - lr * wd instead).
  TORCH_ARG(double, weight_decay) = 0.0;
  // Momentum of the update; what fastai's one-cycle moves. 0: no momentum
  // buffer.
  TORCH_ARG(double, momentum) = 0.9;
  // Divide by sqrt(v - mean(g)^2 + eps) (the gradient's variance) instead.
  TORCH_ARG(bool, centered) = false;
  // Decoupled weight decay (p *= 1 - lr * wd) instead of the L2 term in the
  // gradient.
  TORCH_ARG(bool, decoupled_decay) = false;
  // TensorFlow's momentum: buf = momentum buf + lr g / avg, p -= buf; false:
  // PyTorch's, buf = momentum buf + g / avg, p -= lr buf.
  TORCH_ARG(bool, lr_in_momentum) = true;

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
  double get_lr() const override;
  void set_lr(double lr) override;
};

// One parameter's RMSpropTF state; the tensors are like the parameter.
// square_avg starts at ones (PyTorch's RMSprop: zeros); momentum_buffer and
// grad_avg are undefined until used.
struct RMSpropTFParamState
    : public torch::optim::OptimizerCloneableParamState<RMSpropTFParamState> {
  TORCH_ARG(std::int64_t, step) = 0;
  TORCH_ARG(torch::Tensor, square_avg);
  TORCH_ARG(torch::Tensor, momentum_buffer);
  TORCH_ARG(torch::Tensor, grad_avg);

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
};

// RMSprop as TensorFlow's (timm's RMSpropTF, the optimizer of timm's
// EfficientNet recipe): eps inside the square root, the average of squares
// starting at one, the LR inside the momentum. Where timm would fail (momentum
// or centered turned on after a parameter's state was made), the missing buffer
// starts at zeros.
class RMSpropTF : public torch::optim::Optimizer {
 public:
  explicit RMSpropTF(const std::vector<torch::optim::OptimizerParamGroup>& param_groups,
                     RMSpropTFOptions defaults = {});
  explicit RMSpropTF(std::vector<torch::Tensor> params, RMSpropTFOptions defaults = {})
      : RMSpropTF({torch::optim::OptimizerParamGroup(std::move(params))}, std::move(defaults)) {}

  // Parameters without a gradient are left out.
  torch::Tensor step(LossClosure closure = nullptr) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

 private:
  RMSpropTFParamState& state_of(const torch::Tensor& p, const RMSpropTFOptions& options);
};

}  // namespace ltfit
