// Whether this translation unit compiles ltfit's CUDA-specific code (streams and events, device
// properties, the CUDA allocator): LTFIT_HAS_CUDA_HEADERS is defined for a CUDA build of LibTorch
// whose CUDA headers are on the include path, and never in an LTFIT_CPU_ONLY build, which links
// libtorch_cpu alone even where a CUDA toolkit's headers happen to be installed.
#pragma once

#if !defined(LTFIT_CPU_ONLY) && __has_include(<ATen/cuda/CUDAContextLight.h>) && \
    __has_include(<cuda_runtime_api.h>)
#define LTFIT_HAS_CUDA_HEADERS 1
#endif
