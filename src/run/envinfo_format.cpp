// EnvInfo written out (envinfo.h): JSON with every field (sizes in bytes and GiB, GPU memory in
// MiB, GB and GiB) and an aligned table, one line per item. Thread-safe.
#include "ltfit/run/envinfo.h"

#include <cmath>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ltfit/util/atomic_file.h"
#include "ltfit/util/format.h"
#include "ltfit/util/json.h"
#include "run/envinfo_internal.h"

namespace ltfit {

namespace {

using Json = nlohmann::ordered_json;
using envinfo_internal::kGiB;

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
      {"cuda_half", info.cuda_half},
      {"libtorch_cudnn", info.libtorch_cudnn},
      {"opencv_version", info.opencv_version},
      {"compiler", info.compiler},
      {"ltfit_version", info.ltfit_version},
      {"os", info.os},
      {"kernel", info.kernel},
      {"container", info.container},
      {"launch", info.launch},
      {"dist_backends", info.dist_backends}};
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
  rows.insert(
      rows.end(),
      {{"driver", info.driver_version},
       {"CUDA runtime", info.cuda_runtime},
       {"cuDNN", info.cudnn_version},
       {"LibTorch", info.libtorch_cuda == kCudaNotLoaded
                        ? fmt::format("{} (CPU libraries only: the CUDA half is not loaded)",
                                      info.libtorch_version)
                        : fmt::format("{} (built with CUDA {}, cuDNN {})", info.libtorch_version,
                                      info.libtorch_cuda, info.libtorch_cudnn)},
       {"CUDA half", info.cuda_half},
       {"OpenCV", info.opencv_version},
       {"compiler", info.compiler},
       {"ltfit", info.ltfit_version},
       {"OS", fmt::format("{} ({})", info.os, info.kernel)},
       {"container", info.container},
       {"data-parallel", info.launch + "; backends: " + info.dist_backends}});
  std::string table;
  for (const auto& [label, value] : rows) table += fmt::format("{:<14}{}\n", label, value);
  return table;
}

void write_envinfo_json(const std::string& path, const EnvInfo& info) {
  write_text_atomic(path, envinfo_json(info));
}

}  // namespace ltfit
