// The c10d backends, each built in its own translation unit (gloo_backend.cpp includes gloo's
// headers, which the torch wheel lacks; nccl_backend.cpp asks ltfit's CUDA half, which has NCCL):
// group.cpp sees only c10d::Backend.
#pragma once

#include <chrono>
#include <string>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace ltfit::dist_internal {

// ProcessGroupGloo over `store`. `interface` names the network interface ("" = the address
// `host` resolves to, so loopback runs stay on loopback).
c10::intrusive_ptr<c10d::Backend> make_gloo(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                            int size, std::chrono::milliseconds timeout,
                                            const std::string& interface, const std::string& host);

// ProcessGroupNCCL over `store`, bound to CUDA device `device_index` (made this thread's current
// device first, so NCCL's communicators and barriers use this rank's GPU, not rank % GPUs).
// Throws ConfigError when the CUDA half is not loaded or was built without NCCL.
c10::intrusive_ptr<c10d::Backend> make_nccl(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                            int size, std::chrono::milliseconds timeout,
                                            int device_index);

}  // namespace ltfit::dist_internal
