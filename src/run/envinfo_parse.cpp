// The pure parts of envinfo (envinfo.h): /proc/cpuinfo, /proc/meminfo and nvidia-smi texts to
// fields, GPU memory units, and the container decision from its probe. No I/O; thread-safe.
#include "ltfit/run/envinfo.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>

#include "run/envinfo_internal.h"

namespace ltfit {

namespace envinfo_internal {

std::string trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\r\n\"");
  if (begin == std::string::npos) return "";
  const auto end = s.find_last_not_of(" \t\r\n\"");
  return s.substr(begin, end - begin + 1);
}

std::pair<std::string, std::string> split_key_value(const std::string& line, char sep) {
  const auto colon = line.find(sep);
  if (colon == std::string::npos) return {"", ""};
  return {trim(line.substr(0, colon)), trim(line.substr(colon + 1))};
}

}  // namespace envinfo_internal

namespace {

using envinfo_internal::kGiB;
using envinfo_internal::kMiB;
using envinfo_internal::split_key_value;
using envinfo_internal::trim;

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

}  // namespace ltfit
