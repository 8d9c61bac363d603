// ProcessGroupNCCL, in builds that found nccl.h (LTFIT_WITH_NCCL; the wheel ships it with its
// CUDA libraries).
#include "backends.h"

#include "ltfit/util/error.h"

#ifdef LTFIT_WITH_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace ltfit::dist_internal {

c10::intrusive_ptr<c10d::Backend> make_nccl(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                            int size, std::chrono::milliseconds timeout,
                                            int device_index) {
#ifdef LTFIT_WITH_NCCL
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(device_index));
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
#else
  (void)store, (void)rank, (void)size, (void)timeout, (void)device_index;
  throw ConfigError("dist.backend: this ltfit was built without NCCL",
                    "use dist.backend: gloo, or rebuild with the CUDA torch wheel's nccl.h");
#endif
}

}  // namespace ltfit::dist_internal
