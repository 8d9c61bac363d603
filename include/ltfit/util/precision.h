// Numeric precision of a run: train.precision's dtypes, whether a device can run them, the
// autocast guard, and the backend switches (cuDNN, TF32, determinism). Below every area that
// runs a model (eval, train, study), so none of them needs the trainer for these.
#pragma once

#include <torch/types.h>

#include "ltfit/util/precision_name.h"

namespace ltfit {

// fp32 -> kFloat, fp16 -> kHalf, bf16 -> kBFloat16.
torch::Dtype precision_dtype(Precision precision);

// Throws ConfigError (train.precision) when `precision` cannot run on `device`: fp16 needs a
// CUDA device; bf16 on CUDA needs compute capability >= 8.0. fp32 always passes. bf16 on a CPU
// without native bf16 arithmetic passes with a warning (warn_if_bf16_emulated).
void check_precision(Precision precision, const torch::Device& device);

// Whether this CPU does bf16 arithmetic in hardware (x86: AVX-512 BF16, which every AMX CPU also
// has), where oneDNN's bf16 convolutions run about twice as fast as fp32; elsewhere they are
// emulated and many times slower. False on other architectures (not probed).
bool cpu_has_native_bf16();

// Logs a warning, once per process, when bf16 is asked for on a CPU without native bf16: the
// answers are right, the speed is not what was asked for.
void warn_if_bf16_emulated(Precision precision, const torch::Device& device);

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
