// Whether this test file may use CUDA's own headers (c10/cuda, ATen/cuda): the test binary links
// LibTorch's CUDA half where LibTorch has one (tests/CMakeLists.txt), while ltfit itself reaches
// CUDA only through its CUDA half (ltfit/util/cuda_half.h) and LibTorch's device-generic API.
#pragma once

#if !defined(LTFIT_CPU_ONLY) && __has_include(<ATen/cuda/CUDAContextLight.h>) && \
    __has_include(<cuda_runtime_api.h>)
#define LTFIT_HAS_CUDA_HEADERS 1
#endif
