// libltfit_cuda.so: ltfit's CUDA-specific calls, in a library of their own that links LibTorch's
// CUDA half. ltfit loads it with dlopen when a GPU could be used (util/cuda_half.h), which loads
// libtorch_cuda and registers its kernels; the binary itself links LibTorch's CPU half alone.
// Only what LibTorch's device-generic API cannot do lives here: device properties and NCCL.
// It links no ltfit code (it throws nothing of ltfit's, and logs nothing).
#include <ATen/cuda/CUDAContextLight.h>
#include <c10/cuda/CUDAFunctions.h>
#include <torch/version.h>

#include "ltfit/util/cuda_half.h"

#ifdef LTFIT_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace {

bool properties(int index, ltfit::GpuProperties* out) {
  if (index < 0 || index >= static_cast<int>(c10::cuda::device_count())) return false;
  const cudaDeviceProp* p = at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(index));
  *out = {p->name, static_cast<std::int64_t>(p->totalGlobalMem), p->major, p->minor};
  return true;
}

#ifdef LTFIT_WITH_NCCL
c10::intrusive_ptr<c10d::Backend> make_nccl(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                            int size, std::chrono::milliseconds timeout,
                                            int device_index) {
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(device_index));
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
}
#endif

ltfit::CudaHalf make_table() {
  ltfit::CudaHalf half;
  half.abi = ltfit::kCudaHalfAbi;
  half.torch_version = TORCH_VERSION;
  half.properties = &properties;
#ifdef LTFIT_WITH_NCCL
  half.make_nccl = &make_nccl;
#endif
  return half;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const ltfit::CudaHalf* ltfit_cuda_half() {
  static const ltfit::CudaHalf half = make_table();
  return &half;
}
