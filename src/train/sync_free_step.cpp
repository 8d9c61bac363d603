// The optimizer step with its state on the device and no host read: see sync_free_step.h.
#include "ltfit/train/sync_free_step.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include <ATen/ops/_amp_foreach_non_finite_check_and_unscale.h>
#include <ATen/ops/_amp_update_scale.h>
#include <torch/torch.h>

#include "ltfit/train/fused_optimizer.h"
#include "ltfit/train/optimizer.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

torch::Tensor device_scalar(double value, torch::Dtype dtype, const torch::Device& device) {
  return torch::full({}, value, torch::TensorOptions().dtype(dtype).device(device));
}

// `fresh` where the step is taken (ok 1), `old` where it is skipped (ok 0): no branch on the host.
void gated_copy(torch::Tensor& target, const torch::Tensor& fresh, const torch::Tensor& ok,
                bool gate) {
  if (gate) {
    target.copy_(torch::where(ok > 0, fresh, target));
  } else {
    target.copy_(fresh);
  }
}

// A skipped step's gradient (inf/NaN, already unscaled) as zeros, so that nothing below turns
// into NaN; a taken step's as it is.
torch::Tensor gated_gradient(const torch::Tensor& grad, const torch::Tensor& ok, bool gate) {
  return gate ? torch::where(ok > 0, grad, torch::zeros_like(grad)) : grad;
}

}  // namespace

SyncFreeStep::SyncFreeStep(torch::optim::Optimizer& optimizer, const GradScalerOptions& scaler,
                           double max_grad_norm)
    : optimizer_(optimizer),
      adamw_(dynamic_cast<FusedAdamW*>(&optimizer) != nullptr),
      scaler_options_(scaler),
      max_grad_norm_(max_grad_norm),
      device_(torch::kCPU) {
  if (!adamw_ && dynamic_cast<FusedSGD*>(&optimizer) == nullptr) {
    throw std::invalid_argument("SyncFreeStep drives ltfit's FusedAdamW or FusedSGD only");
  }
  auto& groups = optimizer_.param_groups();
  LTFIT_CHECK(!groups.empty() && !groups.front().params().empty(),
              "SyncFreeStep: the optimizer has no parameters");
  device_ = groups.front().params().front().device();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    lrs_.push_back(device_scalar(0, torch::kDouble, device_));
    for (const auto& p : groups[g].params()) {
      std::int64_t done = 0;
      const auto found = optimizer_.state().find(p.unsafeGetTensorImpl());
      if (adamw_ && found != optimizer_.state().end()) {
        done = static_cast<const torch::optim::AdamWParamState&>(*found->second).step();
      }
      params_.push_back({p, device_scalar(static_cast<double>(done), torch::kDouble, device_), g});
    }
  }
  momentum_ = device_scalar(0, torch::kDouble, device_);
  take_hyper_parameters();  // the options' LRs and momentum until the schedule sets others
  const auto options = torch::TensorOptions().device(device_);
  scale_ = torch::full({1}, scaler.init_scale, options.dtype(torch::kFloat));
  growth_tracker_ = torch::zeros({1}, options.dtype(torch::kInt));
  found_inf_ = torch::zeros({1}, options.dtype(torch::kFloat));
  ok_ = device_scalar(1, torch::kDouble, device_);
}

void SyncFreeStep::set_hyper_parameters(const std::vector<double>& lrs, double momentum) {
  ltfit::set_hyper_parameters(optimizer_, lrs, momentum);  // the options, as checkpoints keep
  const std::size_t per_layer_group = lrs_.size() / lrs.size();
  for (std::size_t g = 0; g < lrs_.size(); ++g) lrs_[g].fill_(lrs[g / per_layer_group]);
  momentum_.fill_(momentum);
}

void SyncFreeStep::take_hyper_parameters() {
  auto& groups = optimizer_.param_groups();
  for (std::size_t g = 0; g < lrs_.size(); ++g) lrs_[g].fill_(groups[g].options().get_lr());
  const auto& first = groups.front().options();
  momentum_.fill_(adamw_
                      ? std::get<0>(static_cast<const torch::optim::AdamWOptions&>(first).betas())
                      : static_cast<const torch::optim::SGDOptions&>(first).momentum());
}

torch::Tensor SyncFreeStep::scale_loss(const torch::Tensor& loss) const {
  if (!scaler_options_.enabled) return loss;
  const bool low = loss.scalar_type() != torch::kFloat && loss.scalar_type() != torch::kDouble;
  return (low ? loss.to(torch::kFloat) : loss) * scale_.reshape({});
}

// The gradients of this step (parameters with one), unscaled and checked into found_inf_ and
// ok_, then clipped as torch's clip_grad_norm_ clips them (the coefficient on the device).
std::vector<torch::Tensor> SyncFreeStep::unscale_and_clip() {
  std::vector<torch::Tensor> grads;
  for (const Param& p : params_) {
    if (p.param.grad().defined()) grads.push_back(p.param.grad());
  }
  found_inf_.zero_();
  if (scaler_options_.enabled && !grads.empty()) {
    const torch::Tensor inverse = scale_.reciprocal();
    std::vector<torch::ScalarType> dtypes;
    for (const auto& g : grads) {
      if (std::find(dtypes.begin(), dtypes.end(), g.scalar_type()) == dtypes.end()) {
        dtypes.push_back(g.scalar_type());
      }
    }
    for (const torch::ScalarType dtype : dtypes) {
      std::vector<torch::Tensor> same;
      for (const auto& g : grads)
        if (g.scalar_type() == dtype) same.push_back(g);
      at::_amp_foreach_non_finite_check_and_unscale_(same, found_inf_, inverse);
    }
  }
  ok_.copy_(1.0 - found_inf_.reshape({}));
  if (max_grad_norm_ > 0 && !grads.empty()) {
    std::vector<torch::Tensor> norms;
    for (const auto& g : grads) norms.push_back(g.norm(2));
    const torch::Tensor total = norms.size() == 1 ? norms[0] : torch::stack(norms).norm(2);
    const torch::Tensor coefficient = (max_grad_norm_ / (total + 1e-6)).clamp_max(1.0);
    for (auto& g : grads) g.mul_(coefficient);
  }
  return grads;
}

void SyncFreeStep::update_adamw(const std::vector<Param*>& params, std::size_t group) {
  const auto& options =
      static_cast<const torch::optim::AdamWOptions&>(optimizer_.param_groups()[group].options());
  const double beta2 = std::get<1>(options.betas());
  const torch::Tensor& lr = lrs_[group];
  const bool gate = scaler_options_.enabled;
  for (Param* p : params) {
    auto& slot = optimizer_.state()[p->param.unsafeGetTensorImpl()];
    if (!slot) {  // as FusedAdamW creates it
      auto fresh = std::make_unique<torch::optim::AdamWParamState>();
      fresh->step(0);
      fresh->exp_avg(torch::zeros_like(p->param, torch::MemoryFormat::Preserve));
      fresh->exp_avg_sq(torch::zeros_like(p->param, torch::MemoryFormat::Preserve));
      slot = std::move(fresh);
    }
    auto& state = static_cast<torch::optim::AdamWParamState&>(*slot);
    torch::Tensor exp_avg = state.exp_avg(), exp_avg_sq = state.exp_avg_sq();
    const torch::Tensor grad = gated_gradient(p->param.grad(), ok_, gate);
    p->step.add_(ok_);
    // The kernel's scalars, in double as FusedAdamW's kernel computes them, then as float32.
    const torch::Tensor step = p->step.clamp_min(1.0);  // a first step skipped: no 0 ** 0
    const torch::Tensor step_size = (-lr / (1.0 - torch::pow(momentum_, step))).to(torch::kFloat);
    const torch::Tensor correction2 = (1.0 - torch::pow(beta2, step)).sqrt().to(torch::kFloat);
    const torch::Tensor decay = (1.0 - lr * options.weight_decay()).to(torch::kFloat);
    const torch::Tensor m = exp_avg.lerp(grad, (1.0 - momentum_).to(torch::kFloat));
    const torch::Tensor v = exp_avg_sq * beta2 + grad * (1.0 - beta2) * grad;
    const torch::Tensor denom = v.sqrt() / correction2 + options.eps();
    gated_copy(p->param, p->param * decay + step_size * m / denom, ok_, gate);
    gated_copy(exp_avg, m, ok_, gate);
    gated_copy(exp_avg_sq, v, ok_, gate);
  }
}

void SyncFreeStep::update_sgd(const std::vector<Param*>& params, std::size_t group) {
  const auto& options =
      static_cast<const torch::optim::SGDOptions&>(optimizer_.param_groups()[group].options());
  const torch::Tensor& lr = lrs_[group];
  const bool gate = scaler_options_.enabled;
  for (Param* p : params) {
    auto& slot = optimizer_.state()[p->param.unsafeGetTensorImpl()];
    if (!slot) {  // zeros, as FusedSGD: the first step's m * 0 + g is g
      auto fresh = std::make_unique<torch::optim::SGDParamState>();
      fresh->momentum_buffer(torch::zeros_like(p->param, torch::MemoryFormat::Preserve));
      slot = std::move(fresh);
    }
    torch::Tensor buffer = static_cast<torch::optim::SGDParamState&>(*slot).momentum_buffer();
    torch::Tensor grad = gated_gradient(p->param.grad(), ok_, gate);
    if (options.weight_decay() != 0) grad = grad + p->param * options.weight_decay();
    const torch::Tensor moved = buffer * momentum_.to(torch::kFloat) + grad;
    gated_copy(p->param, p->param - lr.to(torch::kFloat) * moved, ok_, gate);
    gated_copy(buffer, moved, ok_, gate);
  }
}

void SyncFreeStep::step() {
  torch::NoGradGuard no_grad;
  unscale_and_clip();
  std::vector<std::vector<Param*>> by_group(lrs_.size());
  for (Param& p : params_) {
    if (p.param.grad().defined()) by_group[p.group].push_back(&p);
  }
  for (std::size_t g = 0; g < by_group.size(); ++g) {
    if (by_group[g].empty()) continue;
    if (adamw_) {
      update_adamw(by_group[g], g);
    } else {
      update_sgd(by_group[g], g);
    }
  }
  if (scaler_options_.enabled) {
    at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, scaler_options_.growth_factor,
                           scaler_options_.backoff_factor, scaler_options_.growth_interval);
  }
}

GradScalerState SyncFreeStep::scaler_state() const {
  if (!scaler_options_.enabled) return {1.0, 0};
  return {scale_.item<double>(), growth_tracker_.item<std::int64_t>()};
}

void SyncFreeStep::set_scaler_state(const GradScalerState& state) {
  scale_.fill_(state.scale);
  growth_tracker_.fill_(state.growth_tracker);
}

void SyncFreeStep::set_max_grad_norm(double max_grad_norm) { max_grad_norm_ = max_grad_norm; }

bool SyncFreeStep::last_step_skipped() const { return found_inf_.item<float>() != 0.0f; }

void SyncFreeStep::sync_state() {
  if (!adamw_) return;  // SGD's state is its momentum buffers, updated in place
  for (const Param& p : params_) {
    const auto found = optimizer_.state().find(p.param.unsafeGetTensorImpl());
    if (found == optimizer_.state().end()) continue;
    static_cast<torch::optim::AdamWParamState&>(*found->second)
        .step(static_cast<std::int64_t>(p.step.item<double>()));
  }
}

void SyncFreeStepHook::fit_begin(TrainContext& ctx) {
  step_.emplace(ctx.optimizer, scaler_);
  if (scaler_.enabled) step_->set_scaler_state(ctx.state.scaler);
  ctx.sync_free_step = &*step_;
}

void SyncFreeStepHook::after_loss(TrainContext& ctx) {
  ctx.backward_loss = step_->scale_loss(ctx.backward_loss);
}

void SyncFreeStepHook::before_step(TrainContext& /*ctx*/) { step_->take_hyper_parameters(); }

void SyncFreeStepHook::mirror_scaler(TrainContext& ctx) {
  if (!scaler_.enabled) return;
  ctx.state.scaler = step_->scaler_state();
  ctx.scaler.set_state(ctx.state.scaler);
}

void SyncFreeStepHook::after_step(TrainContext& ctx) {
  const bool saving = ctx.vote_save || ctx.vote_stop;
  // The host scaler mirrors the device's: observers report its scale (steps.csv) unless the
  // losses are read per interval, and checkpoints hold it.
  if (!ctx.loss_deferred || saving) mirror_scaler(ctx);
  if (saving) step_->sync_state();  // before the checkpoint hook saves
}

void SyncFreeStepHook::epoch_end(TrainContext& ctx) {
  mirror_scaler(ctx);
  step_->sync_state();
}

void SyncFreeStepHook::fit_end(TrainContext& ctx) {
  mirror_scaler(ctx);
  step_->sync_state();
  ctx.sync_free_step = nullptr;
}

}  // namespace ltfit
