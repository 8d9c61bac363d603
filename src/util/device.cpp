#include "ltfit/util/device.h"

#include <ATen/Parallel.h>
#include <torch/cuda.h>

#include "ltfit/util/error.h"

namespace ltfit {

torch::Device resolve_device(const std::string& spec, const std::string& key) {
  const bool has_cuda = torch::cuda::is_available();
  if (spec == "auto") return has_cuda ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  if (spec == "cpu") return torch::kCPU;
  if (!has_cuda) {
    throw ConfigError(key + ": '" + spec + "' requested but no CUDA GPU is visible",
                      "use " + key + "=auto or cpu on this machine");
  }
  const torch::Device device(spec == "cuda" ? std::string("cuda:0") : spec);
  if (device.index() >= static_cast<int>(torch::cuda::device_count())) {
    throw ConfigError(key + ": '" + spec + "' but only " +
                      std::to_string(torch::cuda::device_count()) + " GPU(s) are visible");
  }
  return device;
}

std::string describe_device(const torch::Device& device) {
  if (device.is_cpu()) return "cpu (" + std::to_string(at::get_num_threads()) + " threads)";
  return device.str();
}

}  // namespace ltfit
