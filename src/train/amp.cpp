// Mixed precision: GradScaler (torch.amp.GradScaler semantics), AutocastGuard, backend switches.
#include "ltfit/train/amp.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <spdlog/spdlog.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "ltfit/util/error.h"

namespace ltfit {

namespace {

// Divides `grads` (all on one device) in place by `scale`; true if any holds an inf or NaN.
// One fused kernel per dtype, one device sync for the answer.
bool unscale_grads(const std::vector<torch::Tensor>& grads, double scale) {
  if (grads.empty()) return false;
  const auto options = torch::TensorOptions(torch::kFloat).device(grads.front().device());
  torch::Tensor found_inf = torch::zeros({1}, options);
  const torch::Tensor inv_scale = torch::full({1}, 1.0 / scale, options);
  std::vector<torch::ScalarType> dtypes;  // the fused kernel wants one dtype per call
  for (const auto& g : grads)
    if (std::find(dtypes.begin(), dtypes.end(), g.scalar_type()) == dtypes.end())
      dtypes.push_back(g.scalar_type());
  std::vector<torch::Tensor> same_dtype;
  for (const torch::ScalarType dtype : dtypes) {
    same_dtype.clear();
    for (const auto& g : grads)
      if (g.scalar_type() == dtype) same_dtype.push_back(g);
    at::_amp_foreach_non_finite_check_and_unscale_(same_dtype, found_inf, inv_scale);
  }
  return found_inf.item<float>() != 0.0f;
}

}  // namespace

GradScaler::GradScaler(GradScalerOptions options) : options_(options) {
  LTFIT_CHECK(options_.init_scale > 0.0 && std::isfinite(options_.init_scale),
              "GradScaler: init_scale must be positive and finite");
  LTFIT_CHECK(options_.growth_factor > 1.0, "GradScaler: growth_factor must be > 1");
  LTFIT_CHECK(options_.backoff_factor > 0.0 && options_.backoff_factor < 1.0,
              "GradScaler: backoff_factor must be in (0, 1)");
  LTFIT_CHECK(options_.growth_interval > 0, "GradScaler: growth_interval must be positive");
  state_.scale = options_.init_scale;
}

torch::Tensor GradScaler::scale(const torch::Tensor& loss) {
  if (!options_.enabled) return loss;
  // Scale in fp32 at least, as PyTorch's fp32 scale tensor promotes an fp16 loss.
  const bool low = loss.scalar_type() != torch::kFloat && loss.scalar_type() != torch::kDouble;
  return (low ? loss.to(torch::kFloat) : loss) * state_.scale;
}

bool GradScaler::unscale(torch::optim::Optimizer& optimizer) {
  if (!options_.enabled) return false;
  if (stage_ != Stage::kReady) return found_inf_;
  std::vector<torch::Tensor> grads;
  for (auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) {
      const torch::Tensor& g = p.grad();
      if (!g.defined()) continue;  // frozen or unused parameter
      LTFIT_CHECK(g.scalar_type() != torch::kHalf,
                  "GradScaler: fp16 gradients cannot be unscaled; keep parameters fp32");
      LTFIT_CHECK(grads.empty() || g.device() == grads.front().device(),
                  "GradScaler: all gradients must live on one device");
      grads.push_back(g);
    }
  }
  found_inf_ = unscale_grads(grads, state_.scale);
  stage_ = Stage::kUnscaled;
  return found_inf_;
}

bool GradScaler::step(torch::optim::Optimizer& optimizer) {
  if (!options_.enabled) {
    optimizer.step();
    return true;
  }
  LTFIT_CHECK(stage_ != Stage::kStepped, "GradScaler::step called twice without update()");
  const bool skip = unscale(optimizer);
  if (!skip) optimizer.step();
  stage_ = Stage::kStepped;
  return !skip;
}

void GradScaler::update() {
  if (!options_.enabled) return;
  LTFIT_CHECK(stage_ != Stage::kReady, "GradScaler::update called without step() or unscale()");
  if (found_inf_) {
    state_.scale *= options_.backoff_factor;
    state_.growth_tracker = 0;
  } else if (state_.growth_tracker + 1 >= options_.growth_interval) {
    // PyTorch keeps the scale in fp32 and does not grow it into inf.
    const double grown = state_.scale * options_.growth_factor;
    if (std::isfinite(static_cast<float>(grown))) state_.scale = grown;
    state_.growth_tracker = 0;
  } else {
    ++state_.growth_tracker;
  }
  stage_ = Stage::kReady;
}

void GradScaler::set_state(const GradScalerState& state) {
  if (!(state.scale > 0.0 && std::isfinite(state.scale)) || state.growth_tracker < 0) {
    throw CheckpointError(
        "grad scaler state: expected a positive finite scale and a tracker >= 0,"
        " got scale " +
        std::to_string(state.scale) + ", tracker " + std::to_string(state.growth_tracker));
  }
  state_ = state;
  stage_ = Stage::kReady;
}

}  // namespace ltfit
