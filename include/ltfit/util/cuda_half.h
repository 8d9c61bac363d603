// The CUDA half: LibTorch's CUDA libraries and ltfit's few CUDA-specific calls, loaded when the
// process starts, and only where a GPU could be used.
//
// ltfit itself links LibTorch's CPU half alone (libtorch_cpu, libc10). Its CUDA-specific code
// (device properties, NCCL) is a separate library, libltfit_cuda.so (src/cuda/), linked against
// LibTorch's CUDA half; loading it with dlopen loads libtorch_cuda, whose static initialisers
// register the CUDA kernels, hooks, allocator and stream and event implementations. Everything
// else ltfit does on a GPU goes through LibTorch's device-generic API (c10::Stream, c10::Event,
// the device allocator), which works once the CUDA half is in. So one binary runs on a machine
// without the ~3.8 GB of CUDA libraries (they may be absent) and uses them where there is a GPU.
//
// The load must come before anything asks LibTorch about CUDA: LibTorch looks its CUDA hooks up
// once and keeps what it found, so a process that asked first keeps the stub hooks for good.
// main() calls load_cuda_half() first thing; the functions that need CUDA call it too.
//
// LTFIT_CUDA chooses: auto (the default) loads the CUDA half when the NVIDIA driver's library
// (libcuda.so.1) can be opened; off never loads it (a CPU run on a GPU machine, without the
// CUDA half's ~250 MB of resident memory); on loads it even without a driver (a diagnosis).
// LTFIT_CUDA_PLUGIN names libltfit_cuda.so where it is not beside the binary or in ../lib.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <c10/util/intrusive_ptr.h>

namespace c10d {
class Backend;
class Store;
}  // namespace c10d

namespace ltfit {

// Bumped whenever CudaHalf changes: a libltfit_cuda.so of another ltfit is refused.
inline constexpr int kCudaHalfAbi = 1;

struct GpuProperties {
  std::string name;              // "NVIDIA H200"
  std::int64_t total_bytes = 0;  // device memory
  int major = 0;                 // compute capability
  int minor = 0;
};

// What libltfit_cuda.so exports as `ltfit_cuda_half` (extern "C"): plain function pointers, so
// the binary needs none of the CUDA headers. The library is built by the same compiler from the
// same tree (its ABI number and LibTorch version must match the binary's).
struct CudaHalf {
  int abi = 0;
  const char* torch_version = nullptr;  // TORCH_VERSION the library was built against
  // Fills `out` for visible GPU `index`; false when there is no such GPU.
  bool (*properties)(int index, GpuProperties* out) = nullptr;
  // ProcessGroupNCCL over `store`, on GPU `device_index` (made the thread's current device
  // first); null in a build without NCCL's header.
  c10::intrusive_ptr<c10d::Backend> (*make_nccl)(const c10::intrusive_ptr<c10d::Store>& store,
                                                 int rank, int size,
                                                 std::chrono::milliseconds timeout,
                                                 int device_index) = nullptr;
};

struct CudaHalfStatus {
  bool loaded = false;
  std::string library;   // the libltfit_cuda.so loaded, or the one tried
  std::string reason;    // why it is not loaded ("" when loaded)
  double seconds = 0.0;  // how long the load took
};

// Loads the CUDA half as LTFIT_CUDA says (above), once per process; thread-safe. Never throws:
// what went wrong is in the status's reason.
const CudaHalfStatus& load_cuda_half();
// The loaded library's functions, or null when it is not loaded (load_cuda_half() first).
const CudaHalf* cuda_half();
// "loaded from PATH in 0.15 s" or "not loaded: REASON", for envinfo and error messages.
std::string describe_cuda_half();

}  // namespace ltfit

// The entry point libltfit_cuda.so defines.
extern "C" const ltfit::CudaHalf* ltfit_cuda_half();
