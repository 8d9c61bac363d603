// Fused AdamW and SGD steps: see fused_optimizer.h.
#include "ltfit/train/fused_optimizer.h"

#include <ATen/ops/_foreach_add.h>
#include <ATen/ops/_foreach_sub.h>
#include <ATen/ops/_fused_adamw.h>
#include <ATen/ops/_fused_sgd.h>

#include <map>
#include <string>
#include <utility>

#include "ltfit/util/error.h"

namespace ltfit {

namespace {

using torch::optim::AdamWOptions;
using torch::optim::AdamWParamState;
using torch::optim::SGDOptions;
using torch::optim::SGDParamState;

// The fused kernels take lists of one device and one dtype: a group's parameters split so.
using Bucket = std::pair<std::string, torch::Dtype>;

Bucket bucket_of(const torch::Tensor& p) { return {p.device().str(), p.scalar_type()}; }

// The kernels' grad_scale and found_inf arguments: the scaler's, or none.
std::pair<std::optional<torch::Tensor>, std::optional<torch::Tensor>> kernel_scaling(
    const std::optional<ScaledStep>& scaled) {
  if (!scaled) return {};
  return {scaled->grad_scale, scaled->found_inf};
}

void check_dense(const torch::Tensor& p, const char* optimizer) {
  LTFIT_CHECK(!p.grad().is_sparse() && p.is_non_overlapping_and_dense(),
              std::string("the fused ") + optimizer + " takes dense parameters and gradients only");
}

void check_no_closure(const torch::optim::Optimizer::LossClosure& closure) {
  LTFIT_CHECK(closure == nullptr, "the fused optimizers take no closure");
}

std::vector<torch::Tensor> repeated(const torch::Tensor& t, std::size_t n) {
  return std::vector<torch::Tensor>(n, t);
}

// `t` laid out as `p` is. The fused kernels walk every tensor of a parameter as one flat array,
// so a gradient or state in another memory format than its parameter (a contiguous gradient of
// a channels-last weight, a contiguous moment loaded from a checkpoint) would pair the wrong
// elements without a word: torch.optim.AdamW(fused=True) on the CPU does exactly that (torch
// 2.15: a channels-last weight with a contiguous gradient ends 2·lr away from the unfused step).
torch::Tensor laid_out_as(const torch::Tensor& t, const torch::Tensor& p) {
  if (t.strides() == p.strides()) return t;
  return torch::empty_like(p, torch::MemoryFormat::Preserve).copy_(t);
}

}  // namespace

torch::Tensor FusedAdamW::step(LossClosure closure) {
  check_no_closure(closure);
  run(std::nullopt);
  return {};
}

void FusedAdamW::step(const ScaledStep& scaled) { run(scaled); }

// The parameter's AdamW state, created as LibTorch's AdamW creates it, its moments laid out as
// the parameter.
AdamWParamState& FusedAdamW::state_of(const torch::Tensor& p, bool amsgrad) {
  auto& slot = state_[p.unsafeGetTensorImpl()];
  if (!slot) {
    auto fresh = std::make_unique<AdamWParamState>();
    fresh->step(0);
    fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    if (amsgrad) fresh->max_exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    slot = std::move(fresh);
  }
  auto& state = static_cast<AdamWParamState&>(*slot);
  state.exp_avg(laid_out_as(state.exp_avg(), p));
  state.exp_avg_sq(laid_out_as(state.exp_avg_sq(), p));
  if (amsgrad) state.max_exp_avg_sq(laid_out_as(state.max_exp_avg_sq(), p));
  return state;
}

// The kernel's step tensor of `p`, rebuilt from `state`'s int64 count when they differ.
FusedAdamW::StepCount& FusedAdamW::step_count(const torch::Tensor& p,
                                              const AdamWParamState& state) {
  StepCount& count = steps_[p.unsafeGetTensorImpl()];
  if (count.host != state.step() || !count.tensor.defined() ||
      count.tensor.device() != p.device()) {
    count.tensor = torch::full({}, static_cast<double>(state.step()),
                               torch::TensorOptions().dtype(torch::kFloat).device(p.device()));
    count.host = state.step();
  }
  return count;
}

void FusedAdamW::run(const std::optional<ScaledStep>& scaled) {
  torch::NoGradGuard no_grad;
  struct Lists {
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps;
    std::vector<std::pair<AdamWParamState*, StepCount*>> counts;
  };
  // Read once, before any kernel: whether the scaler found an inf/NaN (the step counts stay).
  const bool skipped = scaled && scaled->found_inf.item<float>() != 0.0f;
  const auto [grad_scale, found_inf] = kernel_scaling(scaled);
  for (auto& group : param_groups_) {
    auto& options = static_cast<AdamWOptions&>(group.options());
    std::map<Bucket, Lists> buckets;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      check_dense(p, "AdamW");
      AdamWParamState& state = state_of(p, options.amsgrad());
      StepCount& count = step_count(p, state);
      Lists& lists = buckets[bucket_of(p)];
      lists.params.push_back(p);
      lists.grads.push_back(laid_out_as(p.grad(), p));
      lists.exp_avgs.push_back(state.exp_avg());
      lists.exp_avg_sqs.push_back(state.exp_avg_sq());
      if (options.amsgrad()) lists.max_exp_avg_sqs.push_back(state.max_exp_avg_sq());
      lists.steps.push_back(count.tensor);
      lists.counts.emplace_back(&state, &count);
    }
    const auto [beta1, beta2] = options.betas();
    for (auto& [bucket, lists] : buckets) {
      at::_foreach_add_(lists.steps, 1);
      at::_fused_adamw_(lists.params, lists.grads, lists.exp_avgs, lists.exp_avg_sqs,
                        lists.max_exp_avg_sqs, lists.steps, options.lr(), beta1, beta2,
                        options.weight_decay(), options.eps(), options.amsgrad(),
                        /*maximize=*/false, grad_scale, found_inf);
      if (scaled) at::_foreach_sub_(lists.steps, repeated(scaled->found_inf, lists.steps.size()));
      for (auto& [state, count] : lists.counts) {
        if (skipped) break;
        state->step(state->step() + 1);
        count->host = state->step();
      }
    }
  }
}

torch::Tensor FusedSGD::step(LossClosure closure) {
  check_no_closure(closure);
  run(std::nullopt);
  return {};
}

void FusedSGD::step(const ScaledStep& scaled) { run(scaled); }

void FusedSGD::run(const std::optional<ScaledStep>& scaled) {
  torch::NoGradGuard no_grad;
  // Per (device, dtype) and per first step or not: the kernel's is_first_step covers a whole
  // list (a parameter whose first gradient comes later starts its buffer later, as in LibTorch).
  struct Lists {
    std::vector<torch::Tensor> params, grads, buffers;
  };
  const auto [grad_scale, found_inf] = kernel_scaling(scaled);
  for (auto& group : param_groups_) {
    auto& options = static_cast<SGDOptions&>(group.options());
    const bool momentum = options.momentum() != 0.0;
    std::map<std::pair<Bucket, bool>, Lists> buckets;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      check_dense(p, "SGD");
      bool first = false;
      torch::Tensor buffer;
      if (momentum) {
        auto& slot = state_[p.unsafeGetTensorImpl()];
        if (!slot) {
          auto fresh = std::make_unique<SGDParamState>();
          // Zeros, not torch's empty_like: a first step the scaler skips (found_inf) leaves the
          // buffer as it is, and the next step's m * 0 + g is the first step's g exactly.
          fresh->momentum_buffer(torch::zeros_like(p, torch::MemoryFormat::Preserve));
          slot = std::move(fresh);
          first = true;
        }
        auto& state = static_cast<SGDParamState&>(*slot);
        state.momentum_buffer(laid_out_as(state.momentum_buffer(), p));
        buffer = state.momentum_buffer();
      }
      Lists& lists = buckets[{bucket_of(p), first}];
      lists.params.push_back(p);
      lists.grads.push_back(laid_out_as(p.grad(), p));
      if (momentum) lists.buffers.push_back(buffer);
    }
    for (auto& [key, lists] : buckets) {
      at::_fused_sgd_(lists.params, lists.grads, lists.buffers, options.weight_decay(),
                      options.momentum(), options.lr(), options.dampening(), options.nesterov(),
                      /*maximize=*/false, /*is_first_step=*/key.second, grad_scale, found_inf);
    }
  }
}

}  // namespace ltfit
