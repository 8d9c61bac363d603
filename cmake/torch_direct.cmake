# LibTorch imported directly, without Torch's CMake package (LTFIT_TORCH_DIRECT, implied by
# LTFIT_CPU_ONLY). find_package(Torch) on a CUDA build of LibTorch (the PyPI wheel's) asks for
# the CUDA toolkit (nvcc, CUDAToolkit) although ltfit compiles no CUDA code; the wheel itself
# carries all that ltfit needs: LibTorch's headers and libraries, and the CUDA runtime's headers
# and libraries in site-packages/nvidia/*.
#
# LTFIT_CPU_ONLY links LibTorch's CPU half alone (libtorch_cpu, libc10). It holds every CPU
# kernel, autograd, the C++ frontend and c10d's Gloo backend, and needs two small CUDA libraries
# (libcudart, ~0.8 MB; libcupti, ~6 MB, for the profiler) that load without a driver; the ~3 GB
# of CUDA libraries behind libtorch_cuda are never loaded. No CUDA half (libltfit_cuda.so,
# cmake/torch_halves.cmake) is built, and asking for a CUDA device says that there is none.
#
# The torch prefix is site-packages/torch (the wheel) or an unpacked LibTorch zip: given as
# -DLTFIT_TORCH_ROOT=DIR, or found from CMAKE_PREFIX_PATH's share/cmake entry or Torch_DIR.
set(LTFIT_TORCH_ROOT "" CACHE PATH "LibTorch prefix (holds include/ and lib/)")
if(NOT LTFIT_TORCH_ROOT)
  foreach(dir IN LISTS CMAKE_PREFIX_PATH Torch_DIR)
    foreach(config IN ITEMS "${dir}/Torch/TorchConfig.cmake" "${dir}/TorchConfig.cmake")
      if(NOT LTFIT_TORCH_ROOT AND EXISTS "${config}")
        get_filename_component(found "${config}" DIRECTORY)  # P/share/cmake/Torch
        get_filename_component(found "${found}/../../.." ABSOLUTE)
        set(LTFIT_TORCH_ROOT "${found}" CACHE PATH "" FORCE)
      endif()
    endforeach()
  endforeach()
endif()
if(NOT EXISTS "${LTFIT_TORCH_ROOT}/include/ATen/ATen.h")
  message(FATAL_ERROR "no LibTorch found (looked for include/ATen/ATen.h under "
                      "'${LTFIT_TORCH_ROOT}'). Pass -DLTFIT_TORCH_ROOT=DIR (the torch package's "
                      "directory, or an unpacked LibTorch zip) or CMAKE_PREFIX_PATH="
                      "torch.utils.cmake_prefix_path.")
endif()
set(TORCH_INSTALL_PREFIX "${LTFIT_TORCH_ROOT}")
file(GLOB LTFIT_WHEEL_CUDA_LIBS LIST_DIRECTORIES true "${LTFIT_TORCH_ROOT}/../nvidia/*/lib")

function(ltfit_torch_library var name)
  find_library(${var} ${name} PATHS "${LTFIT_TORCH_ROOT}/lib" ${LTFIT_WHEEL_CUDA_LIBS}
               NO_DEFAULT_PATH REQUIRED)
endfunction()
ltfit_torch_library(LTFIT_TORCH_CPU_LIBRARY torch_cpu)
ltfit_torch_library(LTFIT_C10_LIBRARY c10)

add_library(ltfit_torch INTERFACE)
target_include_directories(ltfit_torch SYSTEM INTERFACE
  "${LTFIT_TORCH_ROOT}/include" "${LTFIT_TORCH_ROOT}/include/torch/csrc/api/include")
# torch_cpu's interface definitions (Caffe2Targets.cmake): c10d's headers need them.
target_compile_definitions(ltfit_torch INTERFACE
  USE_DISTRIBUTED USE_C10D_GLOO USE_RPC USE_TENSORPIPE)
if(LTFIT_CPU_ONLY)
  target_compile_definitions(ltfit_torch INTERFACE LTFIT_CPU_ONLY)
  target_link_libraries(ltfit_torch INTERFACE "${LTFIT_TORCH_CPU_LIBRARY}" "${LTFIT_C10_LIBRARY}")
  message(STATUS "ltfit: CPU-only LibTorch from ${LTFIT_TORCH_ROOT} (torch_cpu, c10)")
else()
  # The CUDA half: libtorch.so (which loads torch_cuda), the CUDA runtime the inline CUDA
  # headers call, and the CUDA headers from the wheel's nvidia-cuda-runtime package.
  ltfit_torch_library(LTFIT_TORCH_LIBRARY torch)
  ltfit_torch_library(LTFIT_TORCH_CUDA_LIBRARY torch_cuda)
  ltfit_torch_library(LTFIT_C10_CUDA_LIBRARY c10_cuda)
  find_library(LTFIT_CUDART_LIBRARY NAMES cudart libcudart.so.13 libcudart.so.12
               PATHS ${LTFIT_WHEEL_CUDA_LIBS} NO_DEFAULT_PATH REQUIRED)
  find_path(LTFIT_CUDA_INCLUDE_DIR cuda_runtime_api.h
            PATHS ${LTFIT_WHEEL_CUDA_LIBS} PATH_SUFFIXES ../include NO_DEFAULT_PATH REQUIRED)
  get_filename_component(LTFIT_CUDA_INCLUDE_DIR "${LTFIT_CUDA_INCLUDE_DIR}" ABSOLUTE)
  # cuda_runtime_api.h includes crt/host_defines.h, which comes in a package of its own
  # (nvidia-cuda-crt) that the torch wheel does not depend on.
  if(NOT EXISTS "${LTFIT_CUDA_INCLUDE_DIR}/crt/host_defines.h")
    message(FATAL_ERROR "LTFIT_TORCH_DIRECT: ${LTFIT_CUDA_INCLUDE_DIR} lacks crt/host_defines.h, "
                        "which cuda_runtime_api.h includes. Install the CUDA headers' package "
                        "beside torch: pip install \"cuda-toolkit[crt]==V\" (V: the cuda-toolkit "
                        "version torch requires; pip show cuda-toolkit).")
  endif()
  target_include_directories(ltfit_torch SYSTEM INTERFACE "${LTFIT_CUDA_INCLUDE_DIR}")
  target_compile_definitions(ltfit_torch INTERFACE USE_C10D_NCCL)
  # --no-as-needed: nothing in ltfit names a libtorch_cuda symbol for every use, yet its static
  # initialisers must run (they register the CUDA kernels), as Torch's own CMake package does.
  target_link_libraries(ltfit_torch INTERFACE
    "-Wl,--no-as-needed,${LTFIT_TORCH_CUDA_LIBRARY}" "-Wl,--as-needed"
    "${LTFIT_TORCH_LIBRARY}" "${LTFIT_TORCH_CPU_LIBRARY}" "${LTFIT_C10_CUDA_LIBRARY}"
    "${LTFIT_C10_LIBRARY}" "${LTFIT_CUDART_LIBRARY}")
  set(LTFIT_TORCH_HAS_CUDA ON)
  message(STATUS "ltfit: CUDA LibTorch from ${LTFIT_TORCH_ROOT}, CUDA headers from "
                 "${LTFIT_CUDA_INCLUDE_DIR} (no CUDA toolkit needed)")
endif()
# The wheel's libtorch_cpu names libcudart and libcupti (site-packages/nvidia/*/lib):
# dependencies.cmake gives the linker LTFIT_WHEEL_CUDA_LIBS to check libtorch_cpu's symbols.
add_library(ltfit::torch ALIAS ltfit_torch)
