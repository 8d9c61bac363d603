# Third-party dependencies. LibTorch comes from CMAKE_PREFIX_PATH (the PyPI torch wheel's
# torch.utils.cmake_prefix_path, or an official LibTorch zip); the rest from the system.
# Every third-party include directory is SYSTEM so their warnings stay out of ours.

# LTFIT_TORCH_DIRECT and LTFIT_CPU_ONLY: cmake/torch_direct.cmake says what they link and why.
option(LTFIT_CPU_ONLY "Link LibTorch's CPU libraries only (no CUDA toolkit, no CUDA at run time)" OFF)
option(LTFIT_TORCH_DIRECT "Import LibTorch without Torch's CMake package (no CUDA toolkit)" OFF)
if(LTFIT_CPU_ONLY OR LTFIT_TORCH_DIRECT)
  include(${CMAKE_CURRENT_LIST_DIR}/torch_direct.cmake)
else()
  # A CUDA build of LibTorch needs the toolkit to configure; the binary still runs without a GPU.
  if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  # Name the GPU architectures up front: Torch's CMake otherwise tries to run a probe program on
  # the build machine's GPU, which fails on a machine without one.
  if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
    set(TORCH_CUDA_ARCH_LIST "8.0;9.0" CACHE STRING "CUDA architectures (only for CUDA LibTorch)")
  endif()
  find_package(Torch REQUIRED)
  add_library(ltfit_torch INTERFACE)
  target_link_libraries(ltfit_torch INTERFACE ${TORCH_LIBRARIES})
  target_include_directories(ltfit_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
  # The PyPI wheel keeps its CUDA libraries in site-packages/nvidia/*/lib, found at run time through
  # libtorch_cuda's $ORIGIN rpath; the linker needs them named (below), or it resolves an older
  # system copy (e.g. the toolkit's libnccl) and fails on missing symbols.
  file(GLOB LTFIT_WHEEL_CUDA_LIBS LIST_DIRECTORIES true "${TORCH_INSTALL_PREFIX}/../nvidia/*/lib")
  add_library(ltfit::torch ALIAS ltfit_torch)
  if(TARGET torch_cuda)
    set(LTFIT_TORCH_HAS_CUDA ON)
  endif()
endif()
# Both ways: the linker must see the wheel's CUDA libraries (site-packages/nvidia/*/lib) that
# LibTorch's libraries name, or it resolves older system copies or cannot check their symbols.
foreach(dir IN LISTS LTFIT_WHEEL_CUDA_LIBS)
  target_link_options(ltfit_torch INTERFACE "LINKER:-rpath-link,${dir}")
endforeach()

# Data-parallel training uses torch's c10d, which the wheel's libraries export. Its Gloo backend's
# header includes gloo's own headers, which the wheel does not ship: Debian's libgloo-dev has
# them (only src/dist/gloo_backend.cpp includes them). NCCL's header comes with the wheel's CUDA
# libraries; without it the build trains on CPUs over Gloo only.
find_path(LTFIT_GLOO_INCLUDE_DIR gloo/config.h)
if(NOT LTFIT_GLOO_INCLUDE_DIR)
  message(FATAL_ERROR "gloo's headers (gloo/config.h) were not found: install libgloo-dev "
                      "(scripts/setup.sh does), or pass -DLTFIT_GLOO_INCLUDE_DIR=DIR")
endif()
target_include_directories(ltfit_torch SYSTEM INTERFACE ${LTFIT_GLOO_INCLUDE_DIR})
include(${CMAKE_CURRENT_LIST_DIR}/torch_halves.cmake)  # ltfit::torch_cpu: what ltfit links
find_path(LTFIT_NCCL_INCLUDE_DIR nccl.h
          HINTS "${TORCH_INSTALL_PREFIX}/../nvidia/nccl/include" NO_DEFAULT_PATH)
if(LTFIT_NCCL_INCLUDE_DIR AND LTFIT_TORCH_HAS_CUDA)
  target_include_directories(ltfit_torch SYSTEM INTERFACE ${LTFIT_NCCL_INCLUDE_DIR})
  target_compile_definitions(ltfit_torch INTERFACE LTFIT_WITH_NCCL)
  message(STATUS "ltfit: NCCL from ${LTFIT_NCCL_INCLUDE_DIR}")
else()
  message(STATUS "ltfit: no NCCL header or no CUDA LibTorch: data-parallel runs use Gloo only")
endif()

find_package(OpenCV REQUIRED COMPONENTS core imgproc imgcodecs)
add_library(ltfit_opencv INTERFACE)
target_link_libraries(ltfit_opencv INTERFACE ${OpenCV_LIBS})
target_include_directories(ltfit_opencv SYSTEM INTERFACE ${OpenCV_INCLUDE_DIRS})
add_library(ltfit::opencv ALIAS ltfit_opencv)

# JPEGs are decoded through libjpeg-turbo's libjpeg API (Debian: libjpeg62-turbo-dev, the
# library OpenCV itself decodes with): DCT scaling by any M/8 and decoding only the rows and
# columns a crop reads (src/data/jpeg_decode.cpp). Without it (or with -DLTFIT_LIBJPEG_TURBO=OFF)
# OpenCV decodes every JPEG whole, reduced by 1/2, 1/4 or 1/8 only.
option(LTFIT_LIBJPEG_TURBO "Decode JPEGs through libjpeg-turbo (scaled, cropped) when found" ON)
add_library(ltfit_libjpeg INTERFACE)
if(LTFIT_LIBJPEG_TURBO)
  find_package(JPEG)
  if(JPEG_FOUND)
    include(CheckSymbolExists)
    set(CMAKE_REQUIRED_INCLUDES ${JPEG_INCLUDE_DIRS})
    set(CMAKE_REQUIRED_LIBRARIES ${JPEG_LIBRARIES})
    check_symbol_exists(jpeg_crop_scanline "stddef.h;stdio.h;jpeglib.h" LTFIT_HAVE_JPEG_CROP)
    unset(CMAKE_REQUIRED_INCLUDES)
    unset(CMAKE_REQUIRED_LIBRARIES)
  endif()
  if(LTFIT_HAVE_JPEG_CROP)
    target_link_libraries(ltfit_libjpeg INTERFACE JPEG::JPEG)
    target_compile_definitions(ltfit_libjpeg INTERFACE LTFIT_WITH_LIBJPEG_TURBO)
    message(STATUS "ltfit: JPEGs decoded through libjpeg-turbo (${JPEG_LIBRARIES})")
  else()
    message(STATUS "ltfit: no libjpeg-turbo (jpeglib.h with jpeg_crop_scanline): OpenCV decodes "
                   "JPEGs whole (install libjpeg62-turbo-dev for scaled, cropped decoding)")
  endif()
endif()
add_library(ltfit::libjpeg ALIAS ltfit_libjpeg)

find_package(yaml-cpp REQUIRED)
find_package(spdlog REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(CURL REQUIRED)
find_package(ZLIB REQUIRED)  # inflate and CRC-32 for the zip reader of torch.save archives
find_package(OpenSSL REQUIRED)
# RE2 (Debian: libre2-dev) matches data.label_pattern in linear time (util/name_pattern.h).
# Debian ships no CMake config for it; found by path, so CMAKE_PREFIX_PATH reaches a carried copy
# (scripts/device_deps.sh) as it does the other libraries.
find_path(LTFIT_RE2_INCLUDE_DIR re2/re2.h)
find_library(LTFIT_RE2_LIBRARY re2)
if(NOT LTFIT_RE2_INCLUDE_DIR OR NOT LTFIT_RE2_LIBRARY)
  message(FATAL_ERROR "RE2 not found (re2/re2.h, libre2): install libre2-dev")
endif()
add_library(ltfit_re2 INTERFACE)
target_include_directories(ltfit_re2 SYSTEM INTERFACE ${LTFIT_RE2_INCLUDE_DIR})
target_link_libraries(ltfit_re2 INTERFACE ${LTFIT_RE2_LIBRARY})
add_library(ltfit::re2 ALIAS ltfit_re2)

# TensorBoard events (src/run/event_file.cpp): protobuf's lite runtime and protoc generate and
# serialize our proto/ltfit_tensorboard.proto (Debian: libprotobuf-dev, protobuf-compiler); the
# records' CRC-32C is Boost.CRC's (header-only, libboost-dev). LibTorch keeps its own protobuf
# hidden (it exports only instantiations for its onnx_torch types), so the two do not clash.
find_package(Protobuf 3 REQUIRED)
find_package(Boost 1.71 REQUIRED)

# LibTorch ships its own fmt headers (a newer major version) in its include directory, which
# would shadow the fmt that spdlog was built against. A directory holding only a link to the
# system fmt, searched first, keeps spdlog on its own fmt; LibTorch's headers do not use fmt.
find_package(fmt REQUIRED)
get_target_property(LTFIT_FMT_INCLUDE fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
list(GET LTFIT_FMT_INCLUDE 0 LTFIT_FMT_INCLUDE)
set(LTFIT_FMT_SHIM ${CMAKE_BINARY_DIR}/fmt-shim)
file(MAKE_DIRECTORY ${LTFIT_FMT_SHIM})
file(CREATE_LINK ${LTFIT_FMT_INCLUDE}/fmt ${LTFIT_FMT_SHIM}/fmt SYMBOLIC)
add_library(ltfit_spdlog INTERFACE)
target_include_directories(ltfit_spdlog SYSTEM BEFORE INTERFACE ${LTFIT_FMT_SHIM})
target_link_libraries(ltfit_spdlog INTERFACE spdlog::spdlog)
add_library(ltfit::spdlog ALIAS ltfit_spdlog)
