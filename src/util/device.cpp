#include "ltfit/util/device.h"

#include <algorithm>

#include <ATen/Parallel.h>
#include <torch/cuda.h>

#include "ltfit/util/error.h"

namespace ltfit {

torch::Device resolve_device(const DeviceRequest& request, const std::string& key) {
  const bool has_cuda = torch::cuda::is_available();
  switch (request.kind) {
    case DeviceRequest::Kind::kAuto:
      return has_cuda ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
    case DeviceRequest::Kind::kCpu:
      return torch::kCPU;
    case DeviceRequest::Kind::kCuda:
      break;
  }
  const std::string text = device_request_name(request);
#ifdef LTFIT_CPU_ONLY
  throw ConfigError(key + ": '" + text +
                        "' requested, but this ltfit is a CPU-only build "
                        "(LTFIT_CPU_ONLY: it links no CUDA)",
                    "use " + key +
                        "=cpu, or the CUDA build (docker/Dockerfile.cuda, or a build "
                        "without -DLTFIT_CPU_ONLY)");
#endif
  if (!has_cuda) {
    throw ConfigError(key + ": '" + text + "' requested but no CUDA GPU is visible",
                      "use " + key + "=auto or cpu on this machine");
  }
  const int index = std::max(request.index, 0);
  if (index >= static_cast<int>(torch::cuda::device_count())) {
    throw ConfigError(key + ": '" + text + "' but only " +
                      std::to_string(torch::cuda::device_count()) + " GPU(s) are visible");
  }
  return {torch::kCUDA, static_cast<c10::DeviceIndex>(index)};
}

torch::Device resolve_device(std::string_view text, const std::string& key) {
  return resolve_device(parse_device_request(text, key), key);
}

std::string describe_device(const torch::Device& device) {
  if (device.is_cpu()) return "cpu (" + std::to_string(at::get_num_threads()) + " threads)";
  return device.str();
}

}  // namespace ltfit
