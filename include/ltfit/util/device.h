// Choosing the compute device and reporting it.
#pragma once

#include <string>

#include <torch/types.h>

namespace ltfit {

// "auto" -> CUDA if a GPU is visible, else CPU; "cpu"; "cuda"; "cuda:N". Throws ConfigError
// naming `key` if a GPU is requested and none (or not that one) is visible.
torch::Device resolve_device(const std::string& spec, const std::string& key = "train.device");

// "cpu (2 threads)" or "cuda:0 (NVIDIA H200)".
std::string describe_device(const torch::Device& device);

}  // namespace ltfit
