#include "ltfit/util/device.h"

#include <algorithm>

#include <ATen/DeviceAccelerator.h>
#include <ATen/Parallel.h>
#include <torch/cuda.h>

#include "ltfit/util/cuda_half.h"
#include "ltfit/util/error.h"

namespace ltfit {

torch::Device resolve_device(const DeviceRequest& request, const std::string& key) {
  // Loaded before LibTorch is asked about CUDA (cuda_half.h); a CUDA half that was refused (from
  // another build) may have loaded LibTorch's, but ltfit does not use a GPU without its own.
  const CudaHalfStatus& half = load_cuda_half();
  const bool has_cuda = half.loaded && torch::cuda::is_available();
  switch (request.kind) {
    case DeviceRequest::Kind::kAuto:
      return has_cuda ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
    case DeviceRequest::Kind::kCpu:
      return torch::kCPU;
    case DeviceRequest::Kind::kCuda:
      break;
  }
  const std::string text = device_request_name(request);
  if (!has_cuda) {
    if (!half.loaded) {
      throw ConfigError(
          key + ": '" + text + "' requested, but ltfit's CUDA half is not loaded: " + half.reason,
          "use " + key +
              "=auto or cpu here; for a GPU, run where the NVIDIA driver is "
              "installed with the CUDA build or bundle (`ltfit envinfo` says what "
              "loaded; LTFIT_CUDA=on forces the load)");
    }
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

c10::DeviceIndex cuda_device_index(const torch::Device& device) {
  return device.has_index() ? device.index() : at::accelerator::getDeviceIndex();
}

std::string describe_device(const torch::Device& device) {
  if (device.is_cpu()) return "cpu (" + std::to_string(at::get_num_threads()) + " threads)";
  return device.str();
}

}  // namespace ltfit
