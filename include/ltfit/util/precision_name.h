// `train.precision`'s values: the Precision enumeration, its one parse and its one name.
//
// Here in util, not with config.h's other enumerations, because util's precision.h (the dtypes,
// what a device can run) takes it and util is below config; config.h includes this header, so
// every config enumeration is reachable from there. Torch-free. Pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace ltfit {

// The numeric precision a run trains and evaluates in.
enum class Precision {
  kFp32,  // float32 throughout
  kFp16,  // float16 autocast with loss scaling (CUDA only)
  kBf16,  // bfloat16 autocast (CPU, or CUDA of compute capability >= 8.0)
};

// "fp32" | "fp16" | "bf16"; otherwise ChoiceError (a ConfigError) "train.precision: expected one
// of fp32, fp16, bf16, got '<text>'".
Precision parse_precision(std::string_view text);
// The same, naming `key` (a flag such as "--precision") in the error instead.
Precision parse_precision(std::string_view text, const std::string& key);
// The name config files use for `precision`.
const std::string& precision_name(Precision precision);

}  // namespace ltfit
