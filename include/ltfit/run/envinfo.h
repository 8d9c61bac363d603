// What machine a run ran on: CPU, memory, disks, /dev/shm, GPUs, driver and library versions,
// and whether it runs in a container (written as env.json beside each run; `ltfit envinfo`).
//
// The 2019 study read its hardware with nvidia-smi and /proc/cpuinfo and warned that GPU memory
// is reported in MiB/GiB, not MB/GB (11.17 GiB = 12.0 GB), so every GPU's memory is given in all
// three units. Every field is filled or explicitly "none" (in JSON and in the table): no GPU gives
// an empty GPU list and "none" for the driver, CUDA runtime and cuDNN versions. GPUs come from
// `nvidia-smi` when it is on PATH, else from LibTorch when it sees a GPU.
// The parse/detect helpers are pure functions of their text; collect_envinfo reads /proc, /sys,
// statvfs and runs nvidia-smi, and is thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ltfit {

inline constexpr const char* kNoneText = "none";
// EnvInfo::libtorch_cuda when ltfit's CUDA half is not loaded (util/cuda_half.h): LibTorch's CPU
// half alone is in the process.
inline constexpr std::string_view kCudaNotLoaded = "not loaded";

// One amount of GPU memory in the three units tools mix up.
struct GpuMemory {
  double mib = 0.0;  // 2^20 bytes, what nvidia-smi prints
  double gb = 0.0;   // 10^9 bytes, what a spec sheet prints
  double gib = 0.0;  // 2^30 bytes, what PyTorch and the study's "11.17 GB" mean
};

// Converts nvidia-smi's MiB: 11441 MiB -> 11.17 GiB -> 12.0 GB.
GpuMemory gpu_memory_from_mib(double mib);

struct GpuInfo {
  int index = 0;                               // position in nvidia-smi / CUDA order
  std::string name;                            // "Tesla K80", "NVIDIA H200"
  GpuMemory memory;                            // total memory
  std::string compute_capability = kNoneText;  // "3.7", "9.0"; "none" if unknown
};

// Space of the file system holding `path`. total/free are null when no path was given or it
// does not exist; `path` is then "none" or the missing path.
struct DiskSpace {
  std::string path = kNoneText;
  std::optional<std::int64_t> total_bytes;
  std::optional<std::int64_t> free_bytes;  // available to an unprivileged user (f_bavail)
};

struct EnvInfo {
  std::string cpu_model = kNoneText;         // /proc/cpuinfo "model name"
  int sockets = 1;                           // distinct "physical id", at least 1
  int physical_cores = 0;                    // distinct (physical id, core id) pairs
  int logical_threads = 0;                   // "processor" entries
  int available_cores = 0;                   // sched_getaffinity: what this process may use
  std::int64_t ram_total_bytes = 0;          // /proc/meminfo MemTotal
  std::int64_t ram_available_bytes = 0;      // /proc/meminfo MemAvailable
  DiskSpace data_disk;                       // file system of --data / data.root
  DiskSpace run_disk;                        // file system of the run directory
  DiskSpace shm;                             // /dev/shm (DataLoader workers' shared memory)
  std::vector<GpuInfo> gpus;                 // empty: no GPU
  std::string gpu_source = kNoneText;        // "nvidia-smi" | "libtorch" | "none"
  std::string driver_version = kNoneText;    // NVIDIA driver, e.g. "550.54.15"
  std::string cuda_runtime = kNoneText;      // CUDA runtime LibTorch uses, e.g. "12.8"
  std::string cudnn_version = kNoneText;     // cuDNN loaded at run time, e.g. "9.10.2"
  std::string libtorch_version = kNoneText;  // TORCH_VERSION
  std::string libtorch_cuda = kNoneText;     // CUDA version LibTorch was built with; "none": CPU
                                             // LibTorch; kCudaNotLoaded: its CUDA half not loaded
  std::string cuda_half = kNoneText;         // "loaded from PATH in 0.15 s" | "not loaded: WHY"
  std::string libtorch_cudnn = kNoneText;    // cuDNN version LibTorch was built with
  std::string opencv_version = kNoneText;    // CV_VERSION
  std::string compiler = kNoneText;          // "GCC 13.2.0", "clang 17.0.6"
  std::string ltfit_version = kNoneText;     // LTFIT_VERSION
  std::string os = kNoneText;                // /etc/os-release PRETTY_NAME
  std::string kernel = kNoneText;            // uname: "Linux 6.8.0 x86_64"
  std::string container = kNoneText;         // "docker" | "podman" | "kubernetes" | "containerd" |
                                             // "lxc" | "container" (other) | "none"
  std::string launch = kNoneText;            // the data-parallel run this process would join
                                             // (dist/launch.h describe_launch), or the error
  std::string dist_backends = kNoneText;  // c10d backends this process has: "gloo" | "gloo, nccl"
};

// Fields of /proc/cpuinfo that matter here.
struct CpuInfo {
  std::string model = kNoneText;
  int sockets = 1;
  int physical_cores = 0;
  int logical_threads = 0;
};
CpuInfo parse_cpuinfo(const std::string& text);

// /proc/meminfo's MemTotal and MemAvailable in bytes (0 when absent).
struct MemInfo {
  std::int64_t total_bytes = 0;
  std::int64_t available_bytes = 0;
};
MemInfo parse_meminfo(const std::string& text);
MemInfo read_meminfo();  // of this machine (or its container's view)

// Parses `nvidia-smi --query-gpu=name,memory.total,driver_version[,compute_cap]
// --format=csv,noheader,nounits` output; the driver version goes to *driver (if not null).
std::vector<GpuInfo> parse_nvidia_smi(const std::string& csv, std::string* driver);

// What the container checks look at, gathered so the decision is testable.
struct ContainerProbe {
  bool dockerenv = false;     // /.dockerenv exists
  bool containerenv = false;  // /run/.containerenv exists (podman)
  std::string cgroup;         // /proc/1/cgroup
  std::string mountinfo;      // /proc/self/mountinfo
  std::string env;            // $container (systemd-nspawn, podman, lxc set it)
};
// The container kind (see EnvInfo::container) or "none". Only the root mount and the
// /etc/hostname, /etc/hosts and /etc/resolv.conf mounts of mountinfo count, so a host that
// merely runs Docker is not mistaken for a container.
std::string detect_container(const ContainerProbe& probe);

// Reads everything; `data_dir` / `run_dir` may be empty ("none").
EnvInfo collect_envinfo(const std::string& data_dir, const std::string& run_dir);

// Pretty-printed JSON with every field (missing values as "none").
std::string envinfo_json(const EnvInfo& info);
// An aligned human-readable table, one line per item, like the study's notes.
std::string envinfo_table(const EnvInfo& info);
// Writes envinfo_json atomically to `path`; throws RuntimeError on failure.
void write_envinfo_json(const std::string& path, const EnvInfo& info);

}  // namespace ltfit
