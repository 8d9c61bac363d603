// ProcessGroupNCCL, made by ltfit's CUDA half (libltfit_cuda.so, util/cuda_half.h): NCCL's
// process group lives in LibTorch's CUDA half, which the binary does not link.
#include "backends.h"

#include "ltfit/util/cuda_half.h"
#include "ltfit/util/error.h"

namespace ltfit::dist_internal {

c10::intrusive_ptr<c10d::Backend> make_nccl(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                            int size, std::chrono::milliseconds timeout,
                                            int device_index) {
  const CudaHalf* half = cuda_half();
  if (half == nullptr) {
    throw ConfigError(
        "dist.backend: nccl needs ltfit's CUDA half, which is " + describe_cuda_half(),
        "use dist.backend: gloo, or run where the CUDA half loads (envinfo says)");
  }
  if (half->make_nccl == nullptr) {
    throw ConfigError("dist.backend: this ltfit was built without NCCL",
                      "use dist.backend: gloo, or rebuild with the CUDA torch wheel's nccl.h");
  }
  return half->make_nccl(store, rank, size, timeout, device_index);
}

}  // namespace ltfit::dist_internal
