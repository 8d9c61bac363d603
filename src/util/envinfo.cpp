#include "ltfit/util/envinfo.h"

#include <sched.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include <ATen/detail/CUDAHooksInterface.h>
#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/version.h>
#include <nlohmann/json.hpp>

#include "ltfit/data/codec_info.h"
#include "ltfit/util/format.h"
#include "ltfit/util/json.h"

// Device properties are only reachable through the CUDA headers of a CUDA build of LibTorch.
#if __has_include(<ATen/cuda/CUDAContextLight.h>) && __has_include(<cuda_runtime_api.h>)
#include <ATen/cuda/CUDAContextLight.h>
#define LTFIT_HAS_CUDA_HEADERS 1
#endif

namespace ltfit {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

std::string trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\r\n\"");
  if (begin == std::string::npos) return "";
  const auto end = s.find_last_not_of(" \t\r\n\"");
  return s.substr(begin, end - begin + 1);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// "key : value" -> (key, value), both trimmed; key empty when the line has no ':'.
std::pair<std::string, std::string> split_key_value(const std::string& line, char sep) {
  const auto colon = line.find(sep);
  if (colon == std::string::npos) return {"", ""};
  return {trim(line.substr(0, colon)), trim(line.substr(colon + 1))};
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

std::vector<GpuInfo> libtorch_gpus() {
  std::vector<GpuInfo> gpus;
#ifdef LTFIT_HAS_CUDA_HEADERS
  if (!torch::cuda::is_available()) return gpus;
  for (int i = 0; i < static_cast<int>(torch::cuda::device_count()); ++i) {
    const auto* p = at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(i));
    gpus.push_back({i, p->name, gpu_memory_from_mib(static_cast<double>(p->totalGlobalMem) / kMiB),
                    fmt::format("{}.{}", p->major, p->minor)});
  }
#endif
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

// Which container runtime `text` names, or "".
std::string kind_in(const std::string& text) {
  const std::pair<const char*, const char*> kinds[] = {{"kubepods", "kubernetes"},
                                                       {"kubelet", "kubernetes"},
                                                       {"libpod", "podman"},
                                                       {"podman", "podman"},
                                                       {"docker", "docker"},
                                                       {"containerd", "containerd"},
                                                       {"lxc", "lxc"}};
  for (const auto& [needle, kind] : kinds) {
    if (text.find(needle) != std::string::npos) return kind;
  }
  return "";
}

// The mountinfo lines for "/" and the files container runtimes bind-mount into a container.
std::string telling_mounts(const std::string& mountinfo) {
  static const std::set<std::string> kPoints = {"/", "/etc/hostname", "/etc/hosts",
                                                "/etc/resolv.conf"};
  std::istringstream in(mountinfo);
  std::string telling;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    if ((fields >> id >> parent >> dev >> root >> point) && kPoints.count(point) > 0) {
      telling += line + "\n";
    }
  }
  return telling;
}

Json disk_json(const DiskSpace& d) {
  const auto bytes = [](const std::optional<std::int64_t>& v) {
    return v ? Json(*v) : Json(kNoneText);
  };
  const auto gib = [](const std::optional<std::int64_t>& v) {
    return v ? Json(std::round(static_cast<double>(*v) / kGiB * 100.0) / 100.0) : Json(kNoneText);
  };
  return {{"path", d.path},
          {"total_bytes", bytes(d.total_bytes)},
          {"free_bytes", bytes(d.free_bytes)},
          {"total_gib", gib(d.total_bytes)},
          {"free_gib", gib(d.free_bytes)}};
}

double round2(double v) { return std::round(v * 100.0) / 100.0; }

std::string gib_text(std::int64_t bytes) {
  return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / kGiB);
}

std::string disk_text(const DiskSpace& d) {
  if (!d.total_bytes) return d.path == kNoneText ? kNoneText : d.path + " (missing)";
  return fmt::format("{}: {} total, {} free", d.path, gib_text(*d.total_bytes),
                     gib_text(d.free_bytes.value_or(0)));
}

}  // namespace

GpuMemory gpu_memory_from_mib(double mib) {
  const double bytes = mib * kMiB;
  return {mib, bytes / 1e9, bytes / kGiB};
}

CpuInfo parse_cpuinfo(const std::string& text) {
  CpuInfo cpu;
  std::set<std::string> sockets;
  std::set<std::pair<std::string, std::string>> cores;
  std::string physical_id = "0";
  int cores_per_socket = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto [key, value] = split_key_value(line, ':');
    if (key == "processor") {
      ++cpu.logical_threads;
      physical_id = "0";
    } else if (key == "model name" && cpu.model == kNoneText && !value.empty()) {
      cpu.model = value;
    } else if (key == "physical id") {
      physical_id = value;
      sockets.insert(value);
    } else if (key == "core id") {
      cores.insert({physical_id, value});
    } else if (key == "cpu cores") {
      cores_per_socket = std::atoi(value.c_str());
    }
  }
  cpu.sockets = std::max<int>(1, static_cast<int>(sockets.size()));
  if (!cores.empty()) {
    cpu.physical_cores = static_cast<int>(cores.size());
  } else if (cores_per_socket > 0) {
    cpu.physical_cores = cores_per_socket * cpu.sockets;
  } else {
    cpu.physical_cores = cpu.logical_threads;
  }
  return cpu;
}

MemInfo parse_meminfo(const std::string& text) {
  MemInfo mem;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto [key, value] = split_key_value(line, ':');
    const std::int64_t bytes = std::atoll(value.c_str()) * 1024;  // values are in kB (KiB)
    if (key == "MemTotal") mem.total_bytes = bytes;
    if (key == "MemAvailable") mem.available_bytes = bytes;
  }
  return mem;
}

MemInfo read_meminfo() { return parse_meminfo(read_text("/proc/meminfo")); }

std::vector<GpuInfo> parse_nvidia_smi(const std::string& csv, std::string* driver) {
  std::vector<GpuInfo> gpus;
  std::istringstream in(csv);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::istringstream row(line);
    for (std::string field; std::getline(row, field, ',');) fields.push_back(trim(field));
    if (fields.size() < 3 || fields[0].empty()) continue;
    GpuInfo gpu;
    gpu.index = static_cast<int>(gpus.size());
    gpu.name = fields[0];
    gpu.memory = gpu_memory_from_mib(std::atof(fields[1].c_str()));
    if (fields.size() > 3 && !fields[3].empty() && fields[3] != "[N/A]") {
      gpu.compute_capability = fields[3];
    }
    if (driver != nullptr) *driver = fields[2];
    gpus.push_back(gpu);
  }
  return gpus;
}

std::string detect_container(const ContainerProbe& probe) {
  const std::string found = kind_in(probe.cgroup + telling_mounts(probe.mountinfo));
  if (found == "kubernetes") return found;  // its pods may also carry a docker marker
  if (probe.dockerenv) return "docker";
  if (probe.containerenv) return "podman";
  if (!probe.env.empty()) {
    const std::string kind = kind_in(probe.env);
    return kind.empty() ? "container" : kind;
  }
  return found.empty() ? kNoneText : found;
}

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
  info.libtorch_cuda =
      hook_version([](const auto& h) { return h.versionCUDART(); }, cuda_version_string);
  info.libtorch_cudnn =
      hook_version([](const auto& h) { return h.versionCuDNN(); }, cudnn_version_string);
  info.opencv_version = opencv_version();
  info.compiler = compiler_name();
  info.ltfit_version = LTFIT_VERSION;
  info.os = os_pretty_name();
  info.kernel = kernel_name();
  const char* env = std::getenv("container");
  info.container = detect_container({fs::exists("/.dockerenv"), fs::exists("/run/.containerenv"),
                                     read_text("/proc/1/cgroup"), read_text("/proc/self/mountinfo"),
                                     env ? env : ""});
  return info;
}

std::string envinfo_json(const EnvInfo& info) {
  Json gpus = Json::array();
  for (const auto& g : info.gpus) {
    gpus.push_back({{"index", g.index},
                    {"name", g.name},
                    {"memory_mib", round2(g.memory.mib)},
                    {"memory_gb", round2(g.memory.gb)},
                    {"memory_gib", round2(g.memory.gib)},
                    {"compute_capability", g.compute_capability}});
  }
  const Json j = {
      {"cpu",
       {{"model", info.cpu_model},
        {"sockets", info.sockets},
        {"physical_cores", info.physical_cores},
        {"logical_threads", info.logical_threads},
        {"available_cores", info.available_cores}}},
      {"memory",
       {{"total_bytes", info.ram_total_bytes},
        {"available_bytes", info.ram_available_bytes},
        {"total_gib", round2(static_cast<double>(info.ram_total_bytes) / kGiB)},
        {"available_gib", round2(static_cast<double>(info.ram_available_bytes) / kGiB)}}},
      {"data_disk", disk_json(info.data_disk)},
      {"run_disk", disk_json(info.run_disk)},
      {"shm", disk_json(info.shm)},
      {"gpus", gpus},
      {"gpu_source", info.gpu_source},
      {"driver_version", info.driver_version},
      {"cuda_runtime", info.cuda_runtime},
      {"cudnn_version", info.cudnn_version},
      {"libtorch_version", info.libtorch_version},
      {"libtorch_cuda", info.libtorch_cuda},
      {"libtorch_cudnn", info.libtorch_cudnn},
      {"opencv_version", info.opencv_version},
      {"compiler", info.compiler},
      {"ltfit_version", info.ltfit_version},
      {"os", info.os},
      {"kernel", info.kernel},
      {"container", info.container}};
  return dump_json(j) + "\n";
}

std::string envinfo_table(const EnvInfo& info) {
  std::vector<std::pair<std::string, std::string>> rows = {
      {"CPU", info.cpu_model},
      {"cores",
       fmt::format("{} socket(s), {} physical core(s), {} thread(s), {} available", info.sockets,
                   info.physical_cores, info.logical_threads, info.available_cores)},
      {"RAM", fmt::format("{} total, {} available", gib_text(info.ram_total_bytes),
                          gib_text(info.ram_available_bytes))},
      {"/dev/shm", disk_text(info.shm)},
      {"data disk", disk_text(info.data_disk)},
      {"run disk", disk_text(info.run_disk)}};
  if (info.gpus.empty()) rows.emplace_back("GPU", kNoneText);
  for (const auto& g : info.gpus) {
    rows.emplace_back(
        fmt::format("GPU {}", g.index),
        fmt::format("{}: {:.0f} MiB = {:.2f} GiB = {:.1f} GB, compute capability {}", g.name,
                    g.memory.mib, g.memory.gib, g.memory.gb, g.compute_capability));
  }
  rows.insert(rows.end(),
              {{"driver", info.driver_version},
               {"CUDA runtime", info.cuda_runtime},
               {"cuDNN", info.cudnn_version},
               {"LibTorch", fmt::format("{} (built with CUDA {}, cuDNN {})", info.libtorch_version,
                                        info.libtorch_cuda, info.libtorch_cudnn)},
               {"OpenCV", info.opencv_version},
               {"compiler", info.compiler},
               {"ltfit", info.ltfit_version},
               {"OS", fmt::format("{} ({})", info.os, info.kernel)},
               {"container", info.container}});
  std::string table;
  for (const auto& [label, value] : rows) table += fmt::format("{:<14}{}\n", label, value);
  return table;
}

void write_envinfo_json(const std::string& path, const EnvInfo& info) {
  write_text_atomic(path, envinfo_json(info));
}

}  // namespace ltfit
