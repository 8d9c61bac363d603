#include "ltfit/util/cuda_half.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <torch/version.h>

#include "ltfit/util/stopwatch.h"

#ifndef LTFIT_INSTALL_LIBDIR
#define LTFIT_INSTALL_LIBDIR "lib"  // CMake's GNUInstallDirs default
#endif

namespace ltfit {

namespace {

namespace fs = std::filesystem;

constexpr const char* kLibraryName = "libltfit_cuda.so";

struct Loaded {
  CudaHalfStatus status;
  const CudaHalf* half = nullptr;
};

std::string dl_error() {
  const char* message = ::dlerror();
  return message != nullptr ? message : "unknown dlopen error";
}

// LTFIT_CUDA_PLUGIN, else beside the binary (a build folder), else in ../lib (an install).
std::vector<fs::path> candidates() {
  if (const char* named = std::getenv("LTFIT_CUDA_PLUGIN"); named != nullptr && *named != '\0') {
    return {fs::path(named)};
  }
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  if (error) return {fs::path(kLibraryName)};  // the loader's own search path
  const fs::path dir = exe.parent_path();
  return {dir / kLibraryName, dir.parent_path() / LTFIT_INSTALL_LIBDIR / kLibraryName};
}

// "auto" | "on" | "off"; anything else is reported and read as auto.
std::string policy(std::string* warning) {
  const char* value = std::getenv("LTFIT_CUDA");
  const std::string text = value != nullptr ? value : "auto";
  if (text == "auto" || text == "on" || text == "off" || text.empty()) {
    return text.empty() ? "auto" : text;
  }
  *warning = fmt::format("LTFIT_CUDA='{}' is not auto, on or off; read as auto. ", text);
  return "auto";
}

// dlopen's the library and checks what it exports; the status says why not.
void open_library(const fs::path& path, Loaded& out) {
  out.status.library = path.string();
  const auto start = std::chrono::steady_clock::now();
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  out.status.seconds = seconds_since(start);
  if (handle == nullptr) {
    out.status.reason = "loading " + path.string() + " failed: " + dl_error();
    return;
  }
  using Entry = const CudaHalf* (*)();
  auto* entry = reinterpret_cast<Entry>(::dlsym(handle, "ltfit_cuda_half"));
  const CudaHalf* half = entry != nullptr ? entry() : nullptr;
  if (half == nullptr) {
    out.status.reason = path.string() + " has no ltfit_cuda_half entry (not ltfit's CUDA half)";
  } else if (half->abi != kCudaHalfAbi || std::string_view(half->torch_version) != TORCH_VERSION) {
    out.status.reason = fmt::format(
        "{} is from another build (ABI {}, LibTorch {}; this ltfit: ABI {}, LibTorch {})",
        path.string(), half->abi, half->torch_version, kCudaHalfAbi, TORCH_VERSION);
  } else {
    out.half = half;
    out.status.loaded = true;
  }
  // A library that loaded but was refused stays loaded: unloading LibTorch's CUDA half after its
  // static initialisers ran is not supported.
}

Loaded load_as(const std::string& mode) {
  Loaded out;
  if (mode == "off") {
    out.status.reason = "LTFIT_CUDA=off";
    return out;
  }
  // The driver's library is what every CUDA program needs first; without it no GPU can be used,
  // and the CUDA half (and its memory) is not worth loading.
  if (mode == "auto" && ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    out.status.reason = "no NVIDIA driver (libcuda.so.1 is not installed)";
    return out;
  }
  std::string tried;
  for (const fs::path& path : candidates()) {
    std::error_code error;
    if (fs::exists(path, error)) {
      open_library(path, out);
      return out;
    }
    tried += (tried.empty() ? "" : ", ") + path.string();
  }
  out.status.library = tried;
  out.status.reason = "this ltfit has no CUDA half (no " + tried + "; a CPU-only build or bundle)";
  return out;
}

Loaded load() {
  std::string warning;
  Loaded out = load_as(policy(&warning));
  if (!out.status.loaded) out.status.reason = warning + out.status.reason;
  return out;
}

const Loaded& loaded() {
  static const Loaded result = load();
  return result;
}

}  // namespace

const CudaHalfStatus& load_cuda_half() { return loaded().status; }

const CudaHalf* cuda_half() { return loaded().half; }

std::string describe_cuda_half() {
  const CudaHalfStatus& status = load_cuda_half();
  if (status.loaded)
    return fmt::format("loaded from {} in {:.2f} s", status.library, status.seconds);
  return "not loaded: " + status.reason;
}

}  // namespace ltfit
