#include "ltfit/util/precision.h"

#include <cstdlib>
#include <mutex>

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <spdlog/spdlog.h>
#include <torch/cuda.h>

#include "ltfit/util/cuda_half.h"
#include "ltfit/util/device.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

// 10 * major + minor of a CUDA device's compute capability (90 for an H100); 0 otherwise.
int compute_capability(const torch::Device& device) {
  const CudaHalf* half = cuda_half();  // loads it first (cuda_half.h)
  if (!device.is_cuda() || half == nullptr || !torch::cuda::is_available()) return 0;
  GpuProperties props;
  return half->properties(cuda_device_index(device), &props) ? props.major * 10 + props.minor : 0;
}

const char* on_off(bool on) { return on ? "on" : "off"; }

}  // namespace

torch::Dtype precision_dtype(Precision precision) {
  switch (precision) {
    case Precision::kFp16:
      return torch::kHalf;
    case Precision::kBf16:
      return torch::kBFloat16;
    case Precision::kFp32:
      break;
  }
  return torch::kFloat;
}

bool cpu_has_native_bf16() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  return __builtin_cpu_supports("avx512bf16") != 0;
#else
  return false;
#endif
}

void warn_if_bf16_emulated(Precision precision, const torch::Device& device) {
  if (precision != Precision::kBf16 || !device.is_cpu() || cpu_has_native_bf16()) return;
  static std::once_flag once;
  std::call_once(once, [] {
    spdlog::warn(
        "precision bf16: this CPU has no native bf16 arithmetic (AVX-512 BF16), so bf16 is "
        "emulated: the results are right but several times slower than fp32; use fp32 here");
  });
}

void check_precision(Precision precision, const torch::Device& device) {
  warn_if_bf16_emulated(precision, device);
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
