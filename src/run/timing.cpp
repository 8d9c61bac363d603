// Phase timing, memory peaks and timing.json.
#include "ltfit/run/timing.h"

#include <sys/resource.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <fstream>

#include <ATen/Context.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <fmt/format.h>
#include <torch/cuda.h>
#include <nlohmann/json.hpp>

#include "ltfit/util/atomic_file.h"
#include "ltfit/util/device.h"
#include "ltfit/util/error.h"
#include "ltfit/util/format.h"
#include "ltfit/util/json.h"
#include "run/optional_json.h"

namespace ltfit {

namespace {

// Also initialises CUDA: the caching allocator exists only once CUDA is initialised (normally by
// the first CUDA tensor), and its statistics calls throw "Invalid device argument" before that.
// torch.cuda's memory functions do the same (_lazy_init) first.
bool usable_cuda(const torch::Device& device) {
  if (!device.is_cuda() || !torch::cuda::is_available()) return false;
  at::globalContext().lazyInitDevice(c10::DeviceType::CUDA);
  return true;
}

double sum(const PhaseSeconds& phases) {
  double total = 0.0;
  for (const double s : phases) total += s;
  return total;
}

nlohmann::json phases_json(const PhaseSeconds& phases) {
  nlohmann::json j = nlohmann::json::object();
  for (int i = 0; i < kPhaseCount; ++i) j[phase_name(static_cast<Phase>(i))] = phases[i];
  return j;
}

nlohmann::json epoch_json(const EpochTiming& e) {
  return {{"epoch", e.epoch},
          {"wall_seconds", e.wall_seconds},
          {"train_images", e.train_images},
          {"images_per_second", e.images_per_second},
          {"phases", phases_json(e.phases)},
          {"other_seconds", std::max(0.0, e.wall_seconds - sum(e.phases))},
          {"peak_rss_bytes", e.peak_rss_bytes},
          {"peak_gpu_bytes", optional_json(e.peak_gpu_bytes)}};
}

// The largest GPU peak over the epochs and since the last reset; null without a GPU.
std::optional<std::int64_t> overall_gpu_peak(const Profiler& profiler) {
  std::optional<std::int64_t> peak = cuda_peak_memory_bytes(profiler.device());
  for (const auto& e : profiler.epochs()) {
    if (e.peak_gpu_bytes) peak = std::max(peak.value_or(0), *e.peak_gpu_bytes);
  }
  return peak;
}

}  // namespace

Profiler::Profiler(const torch::Device& device, bool sync)
    : device_(device),
      sync_(sync),
      sync_cuda_(sync && device.is_cuda()),
      mark_(Clock::now()),
      epoch_start_(mark_) {}

Profiler::Clock::time_point Profiler::now() const {
  if (sync_cuda_) torch::cuda::synchronize(device_.has_index() ? device_.index() : -1);
  return Clock::now();
}

void Profiler::charge(Phase phase, Clock::time_point t) {
  const double seconds = std::chrono::duration<double>(t - mark_).count();
  totals_[static_cast<int>(phase)] += seconds;
  epoch_phases_[static_cast<int>(phase)] += seconds;
}

void Profiler::add_earlier(const PhaseSeconds& earlier) {
  for (int i = 0; i < kPhaseCount; ++i) totals_[i] += earlier[i];
}

void Profiler::begin(Phase phase) {
  LTFIT_CHECK(depth_ < kMaxDepth, "Profiler: phases nested too deeply");
  const Clock::time_point t = now();
  if (depth_ > 0) charge(stack_[depth_ - 1], t);  // the outer phase pauses
  stack_[depth_++] = phase;
  mark_ = t;
}

void Profiler::end(Phase phase, bool sync_device) {
  LTFIT_CHECK(depth_ > 0 && stack_[depth_ - 1] == phase,
              std::string("Profiler: end(") + phase_name(phase) + ") without a matching begin");
  const Clock::time_point t = sync_device ? now() : Clock::now();
  charge(phase, t);
  --depth_;
  mark_ = t;  // the outer phase, if any, resumes
}

void Profiler::begin_epoch(int epoch) {
  LTFIT_CHECK(depth_ == 0, "Profiler: begin_epoch inside an open phase");
  epoch_ = epoch;
  epoch_phases_.fill(0.0);
  reset_cuda_peak_memory(device_);
  epoch_start_ = now();
}

const EpochTiming& Profiler::end_epoch(std::int64_t train_images) {
  LTFIT_CHECK(depth_ == 0, "Profiler: end_epoch inside an open phase");
  EpochTiming e;
  e.epoch = epoch_;
  e.wall_seconds = std::chrono::duration<double>(now() - epoch_start_).count();
  e.train_images = train_images;
  e.phases = epoch_phases_;
  const double train = e.wall_seconds - e.phases[static_cast<int>(Phase::kValidation)] -
                       e.phases[static_cast<int>(Phase::kTta)] -
                       e.phases[static_cast<int>(Phase::kCheckpoint)];
  e.images_per_second = static_cast<double>(train_images) / std::max(train, 1e-9);
  e.peak_rss_bytes = peak_rss_bytes();
  e.peak_gpu_bytes = cuda_peak_memory_bytes(device_);
  epochs_.push_back(e);
  return epochs_.back();
}

ScopedPhase::~ScopedPhase() {
  // While an exception unwinds (perhaps a CUDA error), do not call into the device again.
  profiler_.end(phase_, /*sync_device=*/std::uncaught_exceptions() == uncaught_);
}

std::int64_t peak_rss_bytes() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;  // KiB on Linux
}

std::int64_t current_rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t size_pages = 0;
  std::int64_t resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return 0;
  return resident_pages * static_cast<std::int64_t>(sysconf(_SC_PAGESIZE));
}

std::int64_t heap_in_use_bytes() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
  const struct mallinfo2 info = mallinfo2();
  return static_cast<std::int64_t>(info.uordblks + info.hblkhd);
#else
  return 0;
#endif
}

// LibTorch's device-generic allocator interface: the CUDA caching allocator once the CUDA half
// is loaded (util/cuda_half.h).
std::optional<std::int64_t> cuda_peak_memory_bytes(const torch::Device& device) {
  if (!usable_cuda(device)) return std::nullopt;
  const auto stats =
      c10::getDeviceAllocator(device.type())->getDeviceStats(cuda_device_index(device));
  const auto all = static_cast<std::size_t>(c10::CachingDeviceAllocator::StatType::AGGREGATE);
  return stats.allocated_bytes[all].peak;
}

void reset_cuda_peak_memory(const torch::Device& device) {
  if (!usable_cuda(device)) return;
  c10::getDeviceAllocator(device.type())->resetPeakStats(cuda_device_index(device));
}

std::string timing_json(const Profiler& profiler, double train_seconds,
                        std::optional<double> tta_seconds) {
  nlohmann::json epochs = nlohmann::json::array();
  for (const auto& e : profiler.epochs()) epochs.push_back(epoch_json(e));
  const nlohmann::json j = {{"device", describe_device(profiler.device())},
                            {"sync", profiler.sync()},
                            {"phases", phases_json(profiler.totals())},
                            {"epochs", epochs},
                            {"train_seconds", train_seconds},
                            {"tta_seconds", optional_json(tta_seconds)},
                            {"total_seconds", train_seconds + tta_seconds.value_or(0.0)},
                            {"peak_rss_bytes", peak_rss_bytes()},
                            {"peak_gpu_bytes", optional_json(overall_gpu_peak(profiler))}};
  return dump_json(j) + "\n";
}

void write_timing_json(const std::string& path, const Profiler& profiler, double train_seconds,
                       std::optional<double> tta_seconds) {
  write_text_atomic(path, timing_json(profiler, train_seconds, tta_seconds));
}

std::string format_phase_table(const PhaseSeconds& phases) {
  const double total = sum(phases);
  std::string table = fmt::format("{:<15} {:>8} {:>6}\n", "phase", "time", "share");
  for (int i = 0; i < kPhaseCount; ++i) {
    const double share = total > 0.0 ? 100.0 * phases[i] / total : 0.0;
    table += fmt::format("{:<15} {:>8} {:>5.1f}%\n", phase_name(static_cast<Phase>(i)),
                         format_mm_ss(phases[i]), share);
  }
  table +=
      fmt::format("{:<15} {:>8} {:>5.1f}%", "total", format_mm_ss(total), total > 0 ? 100.0 : 0.0);
  return table;
}

}  // namespace ltfit
