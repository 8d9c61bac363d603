// Does LibTorch's CUDA half register itself when it is loaded at run time, after start-up?
// Linked against libtorch_cpu and libc10 only (scripts/lazy_cuda_probe.sh), it looks at what the
// CUDA half provides (a CUDA kernel for aten::add, the real CUDA hooks) before and after
// dlopen(libtorch_cuda.so), and prints what the load cost in time and resident memory.
// Needs no GPU: registration happens when the library's static initialisers run.
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/detail/CUDAHooksInterface.h>

namespace {

bool has_cuda_add_kernel() {
  const auto op = c10::Dispatcher::singleton().findSchema({"aten::add", "Tensor"});
  return op.has_value() && op->hasKernelForDispatchKey(c10::DispatchKey::CUDA);
}

// The stub hooks (no CUDA half loaded) throw here; the real ones report the runtime's version.
std::string cuda_runtime_version() {
  try {
    return std::to_string(at::detail::getCUDAHooks().versionCUDART());
  } catch (const std::exception&) {
    return "stub hooks (throws)";
  }
}

long resident_mb() {
  std::ifstream status("/proc/self/status");
  std::string key;
  long kb = 0;
  while (status >> key) {
    if (key == "VmRSS:") {
      status >> kb;
      break;
    }
  }
  return kb / 1024;
}

void report(const char* when) {
  std::printf("%-28s CUDA kernel for aten::add: %-3s  CUDA runtime: %-22s RSS %ld MB\n", when,
              has_cuda_add_kernel() ? "yes" : "no", cuda_runtime_version().c_str(), resident_mb());
}

}  // namespace

// LibTorch looks its CUDA hooks up once, on first use, and keeps what it found: a process that
// asks (torch::cuda::is_available(), say) before the load keeps the stub. --ask-first shows it.
int main(int argc, char** argv) {
  const char* library = argc > 1 ? argv[1] : "libtorch_cuda.so";
  const bool ask_first = argc > 2 && std::string(argv[2]) == "--ask-first";
  if (ask_first) {
    report("before dlopen:");
  } else {
    std::printf("before dlopen:               CUDA kernel for aten::add: %-3s  (hooks not asked)\n",
                has_cuda_add_kernel() ? "yes" : "no");
  }
  const auto start = std::chrono::steady_clock::now();
  void* handle = dlopen(library, RTLD_NOW | RTLD_GLOBAL);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (handle == nullptr) {
    std::printf("dlopen(%s) failed: %s\n", library, dlerror());
    return 2;
  }
  std::printf("dlopen(%s): %.2f s\n", library, seconds);
  report("after dlopen:");
  std::printf("visible GPUs: %d\n", at::detail::getCUDAHooks().getNumGPUs());
  return has_cuda_add_kernel() ? 0 : 3;
}
