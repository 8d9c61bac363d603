// Where the training time goes: per-phase wall-clock totals, per-epoch records, memory peaks,
// and timing.json.
//
// A Profiler accumulates *exclusive* seconds per Phase: when a phase starts inside another, the
// outer one pauses until the inner one ends, so the phases never overlap and their sum is at
// most the wall time around them. With `sync` on and a CUDA device, every clock read first waits
// for the GPU, so kernels are charged to the phase that launched them (exact, a little slower);
// with it off, timing costs two clock reads per phase and no map or string look-up.
// Not thread-safe: one Profiler per training thread.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

namespace ltfit {

enum class Phase : int {
  kDataWait,      // waiting for the loader's next batch
  kHostToDevice,  // copying and normalizing the batch on the device
  kForward,       // model forward + loss
  kBackward,      // loss.backward()
  kOptimizer,     // unscale + optimizer step (+ scaler update)
  kValidation,    // per-epoch validation pass
  kTta,           // test-time-augmented evaluation
  kCheckpoint,    // writing checkpoints
  kGradSync,      // data-parallel: all-reducing gradients (and BatchNorm statistics)
};
inline constexpr int kPhaseCount = 9;

// "data_wait", "host_to_device", "forward", "backward", "optimizer", "validation", "tta",
// "checkpoint", "grad_sync".
const char* phase_name(Phase phase);

// Seconds per phase, indexed by static_cast<int>(Phase).
using PhaseSeconds = std::array<double, kPhaseCount>;

// One finished epoch.
struct EpochTiming {
  int epoch = 0;                    // global 0-based epoch
  double wall_seconds = 0.0;        // begin_epoch .. end_epoch
  std::int64_t train_images = 0;    // training images seen in the epoch
  double images_per_second = 0.0;   // train_images / (wall - validation - tta - checkpoint)
  PhaseSeconds phases{};            // this epoch's exclusive seconds per phase
  std::int64_t peak_rss_bytes = 0;  // process peak RSS so far (cannot be reset)
  std::optional<std::int64_t> peak_gpu_bytes;  // epoch's peak allocated GPU memory; null: no GPU
};

class Profiler {
 public:
  using Clock = std::chrono::steady_clock;

  // `sync`: synchronize the device before each clock read (only matters for CUDA).
  Profiler(const torch::Device& device, bool sync);

  // Starts / ends a phase; ends must mirror begins (LIFO). Prefer ScopedPhase.
  // `sync_device` false skips the device sync even with sync on (used while unwinding).
  void begin(Phase phase);
  void end(Phase phase, bool sync_device = true);

  // Starts an epoch's record (and resets the GPU peak-memory counter). No phase may be open.
  void begin_epoch(int epoch);
  // Closes the epoch's record and returns it. No phase may be open.
  const EpochTiming& end_epoch(std::int64_t train_images);

  // Adds earlier sessions' totals of a resumed run (from its checkpoint) to totals().
  void add_earlier(const PhaseSeconds& earlier);

  double seconds(Phase phase) const { return totals_[static_cast<int>(phase)]; }
  // Since construction, plus add_earlier's
  const PhaseSeconds& totals() const { return totals_; }
  const std::vector<EpochTiming>& epochs() const { return epochs_; }
  const torch::Device& device() const { return device_; }
  bool sync() const { return sync_; }

 private:
  static constexpr int kMaxDepth = 8;

  Clock::time_point now() const;  // synchronizes first when sync_cuda_
  void charge(Phase phase, Clock::time_point t);

  torch::Device device_;
  bool sync_;
  bool sync_cuda_;  // sync_ && device_ is CUDA
  PhaseSeconds totals_{};
  PhaseSeconds epoch_phases_{};
  std::array<Phase, kMaxDepth> stack_{};
  int depth_ = 0;
  Clock::time_point mark_;  // when the innermost open phase was last (re)started
  Clock::time_point epoch_start_;
  int epoch_ = 0;
  std::vector<EpochTiming> epochs_;
};

// RAII: `phase` runs for this object's lifetime.
class ScopedPhase {
 public:
  ScopedPhase(Profiler& profiler, Phase phase)
      : profiler_(profiler), phase_(phase), uncaught_(std::uncaught_exceptions()) {
    profiler_.begin(phase_);
  }
  ~ScopedPhase();
  ScopedPhase(const ScopedPhase&) = delete;
  ScopedPhase& operator=(const ScopedPhase&) = delete;

 private:
  Profiler& profiler_;
  Phase phase_;
  int uncaught_;  // exceptions in flight at construction
};

// Peak resident set size of this process (getrusage); 0 if unknown.
std::int64_t peak_rss_bytes();
// Current resident set size (/proc/self/statm); 0 if unknown.
std::int64_t current_rss_bytes();
// Bytes the C heap has handed out and not taken back (glibc's mallinfo2: arena blocks in use
// plus mmapped chunks); 0 where the allocator does not say (another libc, a sanitizer's
// allocator). Unlike the resident set, it grows when freed-but-resident memory is reused.
std::int64_t heap_in_use_bytes();

// Peak bytes allocated by the CUDA caching allocator on `device` since the last reset;
// null when `device` is not CUDA or no GPU is usable.
std::optional<std::int64_t> cuda_peak_memory_bytes(const torch::Device& device);
// Resets that peak counter; does nothing without a usable GPU.
void reset_cuda_peak_memory(const torch::Device& device);

// Writes timing.json atomically: phase totals (earlier sessions' included, add_earlier), this
// session's epochs, train_seconds, tta_seconds (null when not run), total_seconds (train + TTA,
// as the study counts it), sync flag, device, memory peaks.
void write_timing_json(const std::string& path, const Profiler& profiler, double train_seconds,
                       std::optional<double> tta_seconds);
// The same document as a string.
std::string timing_json(const Profiler& profiler, double train_seconds,
                        std::optional<double> tta_seconds);

// A short table for the log: one line per phase with mm:ss and its share of all phases.
std::string format_phase_table(const PhaseSeconds& phases);

}  // namespace ltfit
