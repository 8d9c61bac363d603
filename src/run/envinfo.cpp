// Probing the machine for envinfo (envinfo.h): /proc and /sys, statvfs, sched_getaffinity, uname,
// nvidia-smi (or LibTorch when nvidia-smi is missing) and LibTorch's CUDA hooks; the texts read
// are parsed by envinfo_parse.cpp. Thread-safe (no shared state; runs a child for nvidia-smi).
#include "ltfit/run/envinfo.h"

#include "ltfit/dist/launch.h"

#include <sched.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <ATen/detail/CUDAHooksInterface.h>
#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include "ltfit/data/codec_info.h"
#include "ltfit/util/cuda_half.h"
#include "run/envinfo_internal.h"

namespace ltfit {

namespace {

namespace fs = std::filesystem;
using envinfo_internal::kMiB;
using envinfo_internal::split_key_value;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs a shell command; its stdout, or nullopt when it could not run or exited non-zero.
std::optional<std::string> run_command(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>/dev/null").c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string out;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  const int status = ::pclose(pipe);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return out;
}

DiskSpace disk_space(const std::string& path) {
  DiskSpace disk;
  if (path.empty()) return disk;
  disk.path = path;
  struct statvfs fs_info {};
  if (!fs::exists(path) || ::statvfs(path.c_str(), &fs_info) != 0) return disk;
  disk.total_bytes = static_cast<std::int64_t>(fs_info.f_blocks) * fs_info.f_frsize;
  disk.free_bytes = static_cast<std::int64_t>(fs_info.f_bavail) * fs_info.f_frsize;
  return disk;
}

int affinity_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return CPU_COUNT(&set);
}

std::string os_pretty_name() {
  std::istringstream in(read_text("/etc/os-release"));
  for (std::string line; std::getline(in, line);) {
    const auto [key, value] = split_key_value(line, '=');
    if (key == "PRETTY_NAME" && !value.empty()) return value;
  }
  return kNoneText;
}

std::string kernel_name() {
  struct utsname u {};
  if (::uname(&u) != 0) return kNoneText;
  return std::string(u.sysname) + " " + u.release + " " + u.machine;
}

std::string compiler_name() {
#if defined(__clang__)
  return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  return std::string("GCC ") + __VERSION__;
#else
  return kNoneText;
#endif
}

// 12080 -> "12.8".
std::string cuda_version_string(long v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

// cuDNN 9 encodes major*10000 + minor*100 + patch, cuDNN 8 and older major*1000 + minor*100.
std::string cudnn_version_string(long v) {
  if (v >= 90000) return fmt::format("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100);
  return fmt::format("{}.{}.{}", v / 1000, (v % 1000) / 100, v % 100);
}

// A LibTorch CUDA hook's version, or "none" in a CPU-only build (where the hook throws).
template <typename Query, typename Format>
std::string hook_version(Query query, Format format) {
  try {
    const long v = query(at::detail::getCUDAHooks());
    return v > 0 ? format(v) : std::string(kNoneText);
  } catch (const std::exception&) {
    return kNoneText;
  }
}

// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar 5 ..." -> "550.54.15".
std::string proc_driver_version() {
  std::istringstream in(read_text("/proc/driver/nvidia/version"));
  std::string word, previous;
  while (in >> word) {
    if (previous == "Module") return word;
    previous = word;
  }
  return kNoneText;
}

// Device properties come from ltfit's CUDA half (util/cuda_half.h), when it is loaded.
std::vector<GpuInfo> libtorch_gpus() {
  std::vector<GpuInfo> gpus;
  const CudaHalf* half = cuda_half();
  if (half == nullptr || !torch::cuda::is_available()) return gpus;
  for (int i = 0; i < static_cast<int>(torch::cuda::device_count()); ++i) {
    GpuProperties p;
    if (!half->properties(i, &p)) continue;
    gpus.push_back({i, p.name, gpu_memory_from_mib(static_cast<double>(p.total_bytes) / kMiB),
                    fmt::format("{}.{}", p.major, p.minor)});
  }
  return gpus;
}

void fill_gpus(EnvInfo& info) {
  const std::string query =
      "nvidia-smi --format=csv,noheader,nounits --query-gpu=name,memory.total,driver_version";
  auto csv = run_command(query + ",compute_cap");
  if (!csv) csv = run_command(query);  // drivers before 510 lack compute_cap
  if (csv) info.gpus = parse_nvidia_smi(*csv, &info.driver_version);
  if (!info.gpus.empty()) {
    info.gpu_source = "nvidia-smi";
  } else {
    info.gpus = libtorch_gpus();
    if (!info.gpus.empty()) info.gpu_source = "libtorch";
    info.driver_version = info.gpus.empty() ? kNoneText : proc_driver_version();
  }
  if (info.gpus.empty()) return;
  info.cuda_runtime =
      hook_version([](const auto& h) { return h.versionCUDART(); }, cuda_version_string);
  info.cudnn_version =
      hook_version([](const auto& h) { return h.versionRuntimeCuDNN(); }, cudnn_version_string);
}

}  // namespace

MemInfo read_meminfo() { return parse_meminfo(read_text("/proc/meminfo")); }

EnvInfo collect_envinfo(const std::string& data_dir, const std::string& run_dir) {
  EnvInfo info;
  const CpuInfo cpu = parse_cpuinfo(read_text("/proc/cpuinfo"));
  info.cpu_model = cpu.model;
  info.sockets = cpu.sockets;
  info.logical_threads = cpu.logical_threads > 0
                             ? cpu.logical_threads
                             : static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  info.physical_cores = cpu.physical_cores > 0 ? cpu.physical_cores : info.logical_threads;
  info.available_cores = affinity_cores();
  const MemInfo mem = read_meminfo();
  info.ram_total_bytes = mem.total_bytes;
  info.ram_available_bytes = mem.available_bytes;
  info.data_disk = disk_space(data_dir);
  info.run_disk = disk_space(run_dir);
  info.shm = disk_space("/dev/shm");
  fill_gpus(info);
  info.libtorch_version = TORCH_VERSION;
  info.cuda_half = describe_cuda_half();
  info.libtorch_cuda =
      cuda_half() == nullptr
          ? std::string(kCudaNotLoaded)  // the stub hooks: LibTorch's CPU half alone
          : hook_version([](const auto& h) { return h.versionCUDART(); }, cuda_version_string);
  info.libtorch_cudnn =
      hook_version([](const auto& h) { return h.versionCuDNN(); }, cudnn_version_string);
  info.opencv_version = opencv_version();
  info.compiler = compiler_name();
  info.ltfit_version = LTFIT_VERSION;
  info.os = os_pretty_name();
  info.kernel = kernel_name();
  try {
    info.launch = describe_launch(detect_launch());
  } catch (const std::exception& e) {
    info.launch = std::string("invalid launcher variables: ") + e.what();
  }
  const CudaHalf* half = cuda_half();
  info.dist_backends = half != nullptr && half->make_nccl != nullptr ? "gloo, nccl" : "gloo";
  const char* env = std::getenv("container");
  info.container = detect_container({fs::exists("/.dockerenv"), fs::exists("/run/.containerenv"),
                                     read_text("/proc/1/cgroup"), read_text("/proc/self/mountinfo"),
                                     env ? env : ""});
  return info;
}

}  // namespace ltfit
