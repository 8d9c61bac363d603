# LibTorch's two halves. ltfit_core and the ltfit binary link the CPU half alone (libtorch_cpu,
# libc10: every CPU kernel, autograd, the C++ frontend, c10d with Gloo, and the device-generic
# stream, event and allocator API). LibTorch's CUDA half (libtorch_cuda, libc10_cuda, and the
# ~3.8 GB of CUDA libraries behind them) is linked by libltfit_cuda.so alone (src/cuda/), which
# ltfit loads with dlopen where a GPU could be used (include/ltfit/util/cuda_half.h): one binary
# for CPU and GPU machines. ltfit::torch (all of LibTorch) stays for that library and the tests.
#
# Needs LTFIT_GLOO_INCLUDE_DIR (dependencies.cmake) and, from either way of finding LibTorch,
# TORCH_INSTALL_PREFIX and LTFIT_WHEEL_CUDA_LIBS.
if(LTFIT_CPU_ONLY)
  add_library(ltfit::torch_cpu ALIAS ltfit_torch)  # already the CPU half (torch_direct.cmake)
  return()
endif()
foreach(name IN ITEMS torch_cpu c10)
  string(TOUPPER "${name}" upper)
  find_library(LTFIT_HALF_${upper}_LIBRARY ${name} PATHS "${TORCH_INSTALL_PREFIX}/lib"
               NO_DEFAULT_PATH REQUIRED)
endforeach()
add_library(ltfit_torch_cpu INTERFACE)
target_include_directories(ltfit_torch_cpu SYSTEM INTERFACE
  "${TORCH_INSTALL_PREFIX}/include" "${TORCH_INSTALL_PREFIX}/include/torch/csrc/api/include"
  ${LTFIT_GLOO_INCLUDE_DIR})
# torch_cpu's interface definitions (Caffe2Targets.cmake): c10d's headers need them.
target_compile_definitions(ltfit_torch_cpu INTERFACE
  USE_DISTRIBUTED USE_C10D_GLOO USE_RPC USE_TENSORPIPE)
target_link_libraries(ltfit_torch_cpu INTERFACE
  "${LTFIT_HALF_TORCH_CPU_LIBRARY}" "${LTFIT_HALF_C10_LIBRARY}")
# libtorch_cpu names libcudart and libcupti (the wheel's nvidia/*/lib), which load without a GPU.
foreach(dir IN LISTS LTFIT_WHEEL_CUDA_LIBS)
  target_link_options(ltfit_torch_cpu INTERFACE "LINKER:-rpath-link,${dir}")
endforeach()
add_library(ltfit::torch_cpu ALIAS ltfit_torch_cpu)
