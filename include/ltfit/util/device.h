// Choosing the compute device and reporting it.
#pragma once

#include <string>

#include <torch/types.h>

#include "ltfit/util/device_request.h"

namespace ltfit {

// auto -> CUDA if a GPU is visible, else CPU; cpu; cuda (GPU 0); cuda:N. Throws ConfigError
// naming `key` if a GPU is requested and none (or not that one) is visible.
torch::Device resolve_device(const DeviceRequest& request, const std::string& key = "train.device");
// The same for a request's text (`--device`), parsed first (ChoiceError naming `key`).
torch::Device resolve_device(std::string_view text, const std::string& key);

// The index of GPU `device`: its own, or the current device's for a plain "cuda".
c10::DeviceIndex cuda_device_index(const torch::Device& device);

// "cpu (2 threads)" or "cuda:0 (NVIDIA H200)".
std::string describe_device(const torch::Device& device);

}  // namespace ltfit
