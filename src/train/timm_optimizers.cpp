// timm's LAMB and RMSpropTF: see timm_optimizers.h. Each step mirrors timm's
// single-tensor functions (_single_tensor_lamb, _single_tensor_rmsprop_tf) op
// for op, the scalars computed in double as Python does, so that the two agree
// to float32 rounding.
#include "ltfit/train/timm_optimizers.h"

#include <ATen/ops/_foreach_norm.h>
#include <torch/optim/serialize.h>
#include <torch/serialize/archive.h>
#include <torch/torch.h>

#include <cmath>
#include <string>
#include <utility>

#include "ltfit/util/error.h"

namespace ltfit {

namespace {

using torch::optim::OptimizerParamGroup;

// A scalar option that must be a finite number >= 0 (timm's _validate_scalar).
void timm_check_non_negative(double value, const char* name) {
  LTFIT_CHECK(std::isfinite(value) && value >= 0.0,
              std::string("invalid ") + name + ": " + std::to_string(value));
}

// LibTorch's Optimizer constructor (add_param_group) merges a group's options with the defaults
// for its own optimizer types only and gives any other type's groups a copy of the defaults: the
// groups' own options are put back.
void timm_restore_group_options(torch::optim::Optimizer& optimizer,
                                const std::vector<OptimizerParamGroup>& groups) {
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (groups[i].has_options()) {
      optimizer.param_groups()[i].set_options(groups[i].options().clone());
    }
  }
}

// timm's _lamb_trust_ratio: ||p|| / ||u||, 1 where either norm is 0, clipped at
// 1 for LAMBC. w_norm, u_norm: 0-dim tensors; returns one.
torch::Tensor timm_lamb_trust_ratio(const torch::Tensor& w_norm, const torch::Tensor& u_norm,
                                    bool trust_clip) {
  torch::Tensor ratio = w_norm / u_norm;
  ratio = torch::where(w_norm > 0, torch::where(u_norm > 0, ratio, 1.0), 1.0);
  if (trust_clip) ratio = torch::clamp(ratio, /*min=*/std::nullopt, /*max=*/1.0);
  return ratio;
}

// The per-group scalars of a LAMB step (timm's Lamb.step, computed in double).
struct TimmLambScalars {
  double beta1, beta2, beta3;
  double bias_correction1 = 1.0, bias_correction2 = 1.0;
};

TimmLambScalars timm_lamb_scalars(const LambOptions& o) {
  TimmLambScalars s{std::get<0>(o.betas()), std::get<1>(o.betas()), 1.0};
  if (o.grad_averaging()) s.beta3 = 1.0 - s.beta1;
  if (o.bias_correction()) {
    const auto step = static_cast<double>(o.step());
    s.bias_correction1 = 1.0 - std::pow(s.beta1, step);
    s.bias_correction2 = 1.0 - std::pow(s.beta2, step);
  }
  return s;
}

// One parameter's LAMB update (timm's _single_tensor_lamb loop body). `clip`:
// the global clip divisor (0-dim) or undefined.
void timm_lamb_update(torch::Tensor& p, LambParamState& state, const torch::Tensor& clip,
                      const LambOptions& o, const TimmLambScalars& s) {
  const torch::Tensor grad = clip.defined() ? p.grad() / clip : p.grad();
  torch::Tensor& exp_avg = state.exp_avg();
  torch::Tensor& exp_avg_sq = state.exp_avg_sq();
  if (s.beta3 == 1.0 - s.beta1) {
    exp_avg.lerp_(grad, s.beta3);
  } else {
    exp_avg.mul_(s.beta1).add_(grad, s.beta3);
  }
  exp_avg_sq.mul_(s.beta2).addcmul_(grad, grad, 1.0 - s.beta2);
  const torch::Tensor denom = (exp_avg_sq.sqrt() / std::pow(s.bias_correction2, 0.5)).add_(o.eps());
  torch::Tensor update = (exp_avg / s.bias_correction1).div_(denom);
  const double wd = o.weight_decay();
  if (wd != 0.0) {
    if (o.decoupled_decay()) {
      p.add_(p, -o.lr() * wd);
    } else {
      update.add_(p, wd);
    }
  }
  if (wd != 0.0 || o.always_adapt()) {
    update.mul_(timm_lamb_trust_ratio(p.norm(2.0), update.norm(2.0), o.trust_clip()));
  }
  p.add_(update, -o.lr());
}

// One parameter's RMSpropTF update (timm's _single_tensor_rmsprop_tf loop
// body); `s` holds the buffers that `o` needs.
void timm_rmsprop_tf_update(torch::Tensor& p, RMSpropTFParamState& s, const RMSpropTFOptions& o) {
  const double one_minus_alpha = 1.0 - o.alpha();
  s.step(s.step() + 1);
  torch::Tensor grad = p.grad();
  if (o.weight_decay() != 0.0) {
    if (o.decoupled_decay()) {
      p.mul_(1.0 - o.lr() * o.weight_decay());
    } else {
      grad = grad.add(p, o.weight_decay());
    }
  }
  s.square_avg().add_(grad.pow(2) - s.square_avg(),
                      one_minus_alpha);  // TensorFlow's order
  torch::Tensor avg;
  if (o.centered()) {
    s.grad_avg().add_(grad - s.grad_avg(), one_minus_alpha);
    avg = s.square_avg().addcmul(s.grad_avg(), s.grad_avg(), -1).add(o.eps()).sqrt_();
  } else {
    avg = s.square_avg().add(o.eps()).sqrt_();  // eps inside the square root
  }
  if (o.momentum() > 0) {
    torch::Tensor& buf = s.momentum_buffer();
    buf.mul_(o.momentum());
    if (o.lr_in_momentum()) {
      buf.addcdiv_(grad, avg, o.lr());
      p.add_(-buf);
    } else {
      buf.addcdiv_(grad, avg);
      p.add_(buf, -o.lr());
    }
  } else {
    p.addcdiv_(grad, avg, -o.lr());
  }
}

}  // namespace

// ---- LAMB
// ------------------------------------------------------------------------------------

LambOptions::LambOptions(double lr) : lr_(lr) {}

double LambOptions::get_lr() const { return lr(); }
void LambOptions::set_lr(double lr) { this->lr(lr); }

void LambOptions::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(bias_correction);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(betas);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(eps);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_decay);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(grad_averaging);
  // Absent means none (an archive attribute cannot hold None).
  if (max_grad_norm()) archive.write("max_grad_norm", c10::IValue(*max_grad_norm()));
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(trust_clip);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(always_adapt);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(decoupled_decay);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(step);
}

void LambOptions::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, lr);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, bias_correction);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(betas_t, betas);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, eps);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, weight_decay);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, grad_averaging);
  c10::IValue norm;
  max_grad_norm(archive.try_read("max_grad_norm", norm) ? std::optional<double>(norm.toDouble())
                                                        : std::nullopt);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, trust_clip);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, always_adapt);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, decoupled_decay);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(std::int64_t, step);
}

void LambParamState::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exp_avg);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exp_avg_sq);
}

void LambParamState::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, exp_avg);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, exp_avg_sq);
}

Lamb::Lamb(const std::vector<OptimizerParamGroup>& param_groups, LambOptions defaults)
    : Optimizer(param_groups, std::make_unique<LambOptions>(defaults)) {
  timm_restore_group_options(*this, param_groups);
  timm_check_non_negative(defaults.lr(), "learning rate");
  timm_check_non_negative(defaults.eps(), "epsilon");
  timm_check_non_negative(defaults.weight_decay(), "weight_decay");
  LTFIT_CHECK(!defaults.max_grad_norm() || *defaults.max_grad_norm() > 0.0,
              "max_grad_norm must be positive (or none)");
}

// timm's Lamb._get_clip_grad_norm: max(1, ||(||g_1||, ..., ||g_n||)|| /
// max_grad_norm) over every gradient of every group (0-dim), or undefined when
// clipping is off or no parameter has one.
torch::Tensor Lamb::global_clip() const {
  const auto& max_norm = static_cast<const LambOptions&>(defaults()).max_grad_norm();
  if (!max_norm) return {};
  std::vector<torch::Tensor> grads;
  for (const auto& group : param_groups()) {
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      LTFIT_CHECK(!p.grad().is_sparse(), "Lamb does not support sparse gradients");
      grads.push_back(p.grad());
    }
  }
  if (grads.empty()) return {};
  const torch::Tensor global_norm = at::linalg_vector_norm(torch::stack(at::_foreach_norm(grads)));
  return (global_norm / *max_norm).clamp_(1.0);
}

void Lamb::step_group(OptimizerParamGroup& group, const torch::Tensor& clip) {
  auto& options = static_cast<LambOptions&>(group.options());
  options.step(options.step() + 1);
  const TimmLambScalars scalars = timm_lamb_scalars(options);
  for (auto& p : group.params()) {
    if (!p.grad().defined()) continue;
    auto it = state().find(p.unsafeGetTensorImpl());
    if (it == state().end()) {
      auto fresh = std::make_unique<LambParamState>();
      fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      it = state().emplace(p.unsafeGetTensorImpl(), std::move(fresh)).first;
    }
    timm_lamb_update(p, static_cast<LambParamState&>(*it->second), clip, options, scalars);
  }
}

torch::Tensor Lamb::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  const torch::Tensor clip = global_clip();
  for (auto& group : param_groups()) step_group(group, clip);
  return loss;
}

void Lamb::save(torch::serialize::OutputArchive& archive) const {
  torch::optim::serialize<LambParamState, LambOptions>(archive, *this);
}

void Lamb::load(torch::serialize::InputArchive& archive) {
  torch::optim::serialize<LambParamState, LambOptions>(archive, *this);
}

// ---- RMSpropTF
// -------------------------------------------------------------------------------

RMSpropTFOptions::RMSpropTFOptions(double lr) : lr_(lr) {}

double RMSpropTFOptions::get_lr() const { return lr(); }
void RMSpropTFOptions::set_lr(double lr) { this->lr(lr); }

void RMSpropTFOptions::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(alpha);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(eps);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_decay);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(momentum);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(centered);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(decoupled_decay);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr_in_momentum);
}

void RMSpropTFOptions::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, lr);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, alpha);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, eps);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, weight_decay);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, momentum);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, centered);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, decoupled_decay);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, lr_in_momentum);
}

void RMSpropTFParamState::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(step);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(square_avg);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(momentum_buffer);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(grad_avg);
}

void RMSpropTFParamState::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(std::int64_t, step);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, square_avg);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, momentum_buffer);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, grad_avg);
}

RMSpropTF::RMSpropTF(const std::vector<OptimizerParamGroup>& param_groups,
                     RMSpropTFOptions defaults)
    : Optimizer(param_groups, std::make_unique<RMSpropTFOptions>(defaults)) {
  timm_restore_group_options(*this, param_groups);
  timm_check_non_negative(defaults.lr(), "learning rate");
  timm_check_non_negative(defaults.eps(), "epsilon");
  timm_check_non_negative(defaults.momentum(), "momentum");
  timm_check_non_negative(defaults.weight_decay(), "weight_decay");
  timm_check_non_negative(defaults.alpha(), "alpha");
}

// `p`'s state, made as timm makes it (square_avg ones) on its first step, with
// the buffers that `options` need.
RMSpropTFParamState& RMSpropTF::state_of(const torch::Tensor& p, const RMSpropTFOptions& options) {
  auto it = state().find(p.unsafeGetTensorImpl());
  if (it == state().end()) {
    auto fresh = std::make_unique<RMSpropTFParamState>();
    fresh->square_avg(torch::ones_like(p, torch::MemoryFormat::Preserve));
    it = state().emplace(p.unsafeGetTensorImpl(), std::move(fresh)).first;
  }
  auto& s = static_cast<RMSpropTFParamState&>(*it->second);
  if (options.momentum() > 0 && !s.momentum_buffer().defined()) {
    s.momentum_buffer(torch::zeros_like(p, torch::MemoryFormat::Preserve));
  }
  if (options.centered() && !s.grad_avg().defined()) {
    s.grad_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
  }
  return s;
}

torch::Tensor RMSpropTF::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups()) {
    const auto& options = static_cast<const RMSpropTFOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      LTFIT_CHECK(!p.grad().is_sparse(), "RMSpropTF does not support sparse gradients");
      timm_rmsprop_tf_update(p, state_of(p, options), options);
    }
  }
  return loss;
}

void RMSpropTF::save(torch::serialize::OutputArchive& archive) const {
  torch::optim::serialize<RMSpropTFParamState, RMSpropTFOptions>(archive, *this);
}

void RMSpropTF::load(torch::serialize::InputArchive& archive) {
  torch::optim::serialize<RMSpropTFParamState, RMSpropTFOptions>(archive, *this);
}

}  // namespace ltfit
