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

// The CUDA headers exist only in a CUDA build of LibTorch; without them no device is CUDA.
#if __has_include(<ATen/cuda/CUDAContextLight.h>) && __has_include(<cuda_runtime_api.h>)
#include <ATen/cuda/CUDAContextLight.h>
#include <c10/cuda/CUDAFunctions.h>
#define LTFIT_HAS_CUDA_HEADERS 1
#endif

namespace ltfit {

namespace {

// 10 * major + minor of a CUDA device's compute capability (90 for an H100); 0 otherwise.
int compute_capability(const torch::Device& device) {
#ifdef LTFIT_HAS_CUDA_HEADERS
  if (!device.is_cuda() || !torch::cuda::is_available()) return 0;
  const c10::DeviceIndex index = device.has_index() ? device.index() : c10::cuda::current_device();
  const cudaDeviceProp* props = at::cuda::getDeviceProperties(index);
  return props->major * 10 + props->minor;
#else
  return 0;
#endif
}

const char* on_off(bool on) { return on ? "on" : "off"; }

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

torch::Dtype precision_dtype(const std::string& precision) {
  if (precision == "fp32") return torch::kFloat;
  if (precision == "fp16") return torch::kHalf;
  if (precision == "bf16") return torch::kBFloat16;
  throw ConfigError("train.precision: expected one of fp32, fp16, bf16, got '" + precision + "'");
}

void check_precision(const std::string& precision, const torch::Device& device) {
  const torch::Dtype dtype = precision_dtype(precision);
  if (dtype == torch::kHalf && !device.is_cuda()) {
    throw ConfigError(
        "train.precision: fp16 needs a CUDA device, but training runs on " + device.str(),
        "use train.precision=bf16 (CPU and recent GPUs) or fp32 on this machine");
  }
  const int cc = compute_capability(device);
  if (dtype == torch::kBFloat16 && device.is_cuda() && cc < 80) {
    throw ConfigError("train.precision: bf16 needs a GPU of compute capability 8.0 or newer, " +
                          device.str() + " has " + std::to_string(cc / 10) + "." +
                          std::to_string(cc % 10),
                      "use train.precision=fp16 on this GPU");
  }
}

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

AutocastGuard::AutocastGuard(torch::DeviceType device_type, torch::Dtype dtype)
    : active_(dtype != torch::kFloat), device_type_(device_type), dtype_(dtype) {
  if (!active_) return;
  LTFIT_CHECK(dtype == torch::kHalf || dtype == torch::kBFloat16,
              "AutocastGuard: dtype must be fp32, fp16 or bf16");
  prev_enabled_ = at::autocast::is_autocast_enabled(device_type_);
  prev_dtype_ = at::autocast::get_autocast_dtype(device_type_);
  if (switches_dtype()) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(device_type_, true);
  at::autocast::set_autocast_dtype(device_type_, dtype);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  // As torch.autocast.__exit__: the cached fp16/bf16 weight copies die with the outermost scope.
  // The cache is keyed by tensor, not dtype, so a scope that switched dtype also clears it.
  if (at::autocast::decrement_nesting() == 0 || switches_dtype()) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(device_type_, prev_enabled_);
  at::autocast::set_autocast_dtype(device_type_, prev_dtype_);
}

void configure_backends(const torch::Device& device, bool deterministic) {
  auto& ctx = at::globalContext();
  ctx.setDeterministicAlgorithms(deterministic, /*warn_only=*/false);
  if (!device.is_cuda()) {
    spdlog::info("backends: {}, deterministic algorithms {}", device.str(), on_off(deterministic));
    return;
  }
  // Deterministic cuBLAS needs a fixed workspace; it must be set before the first cuBLAS call.
  if (deterministic) setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  ctx.setBenchmarkCuDNN(!deterministic);
  ctx.setDeterministicCuDNN(deterministic);
  const int cc = compute_capability(device);
  const bool tf32 = cc >= 80;  // TF32 tensor cores exist from Ampere (sm_80) on
  ctx.setAllowTF32CuBLAS(tf32);
  ctx.setAllowTF32CuDNN(tf32);
  spdlog::info("backends: {} (sm_{}), cudnn.benchmark {}, tf32 {}, deterministic algorithms {}",
               device.str(), cc, on_off(!deterministic), on_off(tf32), on_off(deterministic));
}

}  // namespace ltfit
