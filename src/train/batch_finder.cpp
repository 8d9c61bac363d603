#include "ltfit/train/batch_finder.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <new>
#include <optional>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/util/Exception.h>
#include <torch/cuda.h>

#include "ltfit/model/model_factory.h"
#include "ltfit/run/envinfo.h"
#include "ltfit/run/timing.h"
#include "ltfit/train/optimizer.h"
#include "ltfit/train/trainer.h"
#include "ltfit/util/error.h"
#include "ltfit/util/precision.h"

#include "ltfit/util/stopwatch.h"

namespace ltfit {

namespace {

using Clock = std::chrono::steady_clock;

bool is_oom_message(std::string message) {
  std::transform(message.begin(), message.end(), message.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return message.find("out of memory") != std::string::npos ||
         message.find("can't allocate memory") != std::string::npos ||
         message.find("not enough memory") != std::string::npos;
}

void empty_cuda_cache(const torch::Device& device) {
  if (device.is_cuda() && torch::cuda::is_available()) {
    // The allocator exists only once CUDA is initialised; before that emptyCache() throws.
    at::globalContext().lazyInitDevice(c10::DeviceType::CUDA);
    c10::getDeviceAllocator(c10::DeviceType::CUDA)->emptyCache();
  }
}

// The same random batch, `steps` times an epoch: what a training step at that size holds.
class RandomBatches : public BatchSource {
 public:
  RandomBatches(int batch, std::int64_t side, std::int64_t classes, std::uint64_t seed,
                std::int64_t steps)
      : steps_(steps) {
    auto generator = at::detail::createCPUGenerator(seed);
    batch_.images = torch::randint(256, {batch, side, side, 3}, generator, torch::kUInt8);
    batch_.labels = torch::randint(classes, {batch}, generator, torch::kLong);
  }
  void start_epoch(int /*epoch*/, std::int64_t skip_batches) override { served_ = skip_batches; }
  std::optional<Batch> next() override {
    if (served_ >= steps_) return std::nullopt;
    ++served_;
    return batch_;
  }
  std::int64_t batches_per_epoch() const override { return steps_; }

 private:
  Batch batch_;
  std::int64_t steps_;
  std::int64_t served_ = 0;
};

// Largest resident set and heap in use, sampled where a step holds the most: after the forward
// (activations kept for backward), after backward (+ gradients) and after the step (+ optimizer
// state).
struct HostMemoryPeak {
  std::int64_t rss = current_rss_bytes();
  std::int64_t heap = heap_in_use_bytes();
};

class HostMemorySampler : public Hook {
 public:
  void after_loss(TrainContext& /*ctx*/) override { sample(); }
  void after_backward(TrainContext& /*ctx*/) override { sample(); }
  void after_step(TrainContext& /*ctx*/) override { sample(); }
  HostMemoryPeak peak;

 private:
  void sample() {
    peak.rss = std::max(peak.rss, current_rss_bytes());
    peak.heap = std::max(peak.heap, heap_in_use_bytes());
  }
};

// Builds the model and optimizer and runs `options.steps` training steps at `batch` with the
// Trainer, under the config's precision and memory format; returns the host memory sampled
// (CPU memory is not otherwise visible).
HostMemoryPeak run_steps(const Config& config, const torch::Device& device, int batch,
                         const BatchFitOptions& options) {
  ModelConfig model_config = config.model;
  model_config.pretrained = {PretrainedWeights::Kind::kNone,
                             ""};  // weights do not change memory; nothing to download
  Classifier model = build_model(model_config, options.num_classes);
  model->to(device);
  if (config.train.channels_last) set_channels_last(model);
  auto optimizer = make_optimizer(config.train.optimizer, model);
  RandomBatches batches(batch, config.data.image_size, options.num_classes, config.run.seed,
                        options.steps);
  HostMemorySampler sampler;
  TrainerOptions trainer_options;
  trainer_options.device = device;
  trainer_options.train = config.train;
  Trainer trainer(model, *optimizer, batches, /*valid=*/nullptr, trainer_options, {&sampler});
  StagePlan stage;
  stage.name = "find_batch";
  trainer.fit({stage});  // unfrozen: every gradient, the most memory a step can take
  if (device.is_cuda()) torch::cuda::synchronize(device.has_index() ? device.index() : -1);
  return sampler.peak;
}

// One trial; on CPU its memory is measured from `baseline_rss` (the process before any trial).
TrialMemory trial(const Config& config, const torch::Device& device, int batch,
                  const BatchFitOptions& options, std::int64_t baseline_rss) {
  check_precision(config.train.precision, device);
  TrialMemory result;
  reset_cuda_peak_memory(device);
  const std::int64_t peak_before = peak_rss_bytes();
  const std::int64_t heap_before = heap_in_use_bytes();
  HostMemoryPeak sampled{0, 0};
  try {
    sampled = run_steps(config, device, batch, options);
    result.fits = true;
  } catch (const c10::OutOfMemoryError&) {
    result.note = "out of memory";
  } catch (const c10::Error& e) {
    if (!is_oom_message(e.what())) {
      throw RuntimeError("find-batch: the trial at batch " + std::to_string(batch) +
                             " failed: " + e.what_without_backtrace(),
                         "check the config's model and data.image_size");
    }
    result.note = "out of memory";
  } catch (const std::bad_alloc&) {
    result.note = "out of memory";
  }
  if (device.is_cuda()) {
    result.bytes = cuda_peak_memory_bytes(device).value_or(0);
  } else {
    // The kernel's peak counts only when this trial raised it; otherwise the sampled maximum.
    // The resident set misses memory an earlier trial freed and this one reused (it stays
    // resident), so the heap's own growth during the trial counts too: the larger of the two.
    const std::int64_t peak_after = peak_rss_bytes();
    const std::int64_t trial_peak = peak_after > peak_before ? peak_after : sampled.rss;
    const std::int64_t heap_growth = heap_before > 0 ? sampled.heap - heap_before : 0;
    result.bytes = std::max<std::int64_t>({0, trial_peak - baseline_rss, heap_growth});
    const std::int64_t budget = cpu_budget_bytes(options);
    if (result.fits && result.bytes > budget) {
      result.fits = false;
      result.note = "over the CPU memory budget";
    }
  }
  empty_cuda_cache(device);  // every trial starts from an empty cache
  return result;
}

// Growth at `batch`, extrapolated linearly from the (batch, bytes) of successful trials.
std::optional<std::int64_t> predict_bytes(const std::vector<std::pair<int, std::int64_t>>& ok,
                                          int batch) {
  if (ok.empty()) return std::nullopt;
  const auto& [b2, m2] = ok.back();
  if (ok.size() == 1 || ok[ok.size() - 2].first == b2) {
    return static_cast<std::int64_t>(static_cast<double>(m2) * batch / b2);
  }
  const auto& [b1, m1] = ok[ok.size() - 2];
  const double slope = std::max(0.0, static_cast<double>(m2 - m1) / (b2 - b1));
  return m2 + static_cast<std::int64_t>(slope * (batch - b2));
}

}  // namespace

BatchSearch find_largest_batch(const std::function<bool(int)>& fits, int start, int max) {
  if (start < 1 || max < start) {
    throw ConfigError("find-batch: expected 1 <= start <= max, got start " + std::to_string(start) +
                      " and max " + std::to_string(max));
  }
  BatchSearch search;
  const auto attempt = [&](int batch) {
    const auto t0 = Clock::now();
    const bool ok = fits(batch);
    search.trials.push_back({batch, ok, seconds_since(t0)});
    return ok;
  };
  if (!attempt(start)) return search;
  int good = start;
  int bad = 0;  // 0: no failure seen yet
  while (good < max) {
    const int next = static_cast<int>(std::min<std::int64_t>(2LL * good, max));
    if (!attempt(next)) {
      bad = next;
      break;
    }
    good = next;
  }
  while (bad != 0 && bad - good > 1) {
    const int mid = good + (bad - good) / 2;
    if (attempt(mid)) {
      good = mid;
    } else {
      bad = mid;
    }
  }
  search.largest = good;
  return search;
}

std::int64_t cpu_budget_bytes(const BatchFitOptions& options) {
  if (options.cpu_budget_bytes > 0) return options.cpu_budget_bytes;
  return read_meminfo().available_bytes / 10 * 8;
}

TrialMemory run_batch_trial(const Config& config, const torch::Device& device, int batch,
                            const BatchFitOptions& options) {
  return trial(config, device, batch, options, current_rss_bytes());
}

std::function<bool(int)> make_trial_predicate(
    const Config& config, const torch::Device& device, const BatchFitOptions& options,
    std::function<void(int batch, const TrialMemory&, double seconds)> report) {
  BatchFitOptions resolved = options;
  resolved.cpu_budget_bytes = cpu_budget_bytes(options);  // fixed once, before any trial
  auto successes = std::make_shared<std::vector<std::pair<int, std::int64_t>>>();
  const std::int64_t baseline = current_rss_bytes();
  return [=](int batch) {
    const auto t0 = Clock::now();
    TrialMemory result;
    const auto predicted = device.is_cuda() ? std::nullopt : predict_bytes(*successes, batch);
    if (predicted && *predicted > resolved.cpu_budget_bytes) {
      // Running it could get the process killed by the kernel's OOM killer instead.
      result = {false, *predicted, /*skipped=*/true, "predicted over the CPU memory budget"};
    } else {
      result = trial(config, device, batch, resolved, baseline);
    }
    if (result.fits) {
      successes->emplace_back(batch, result.bytes);
      std::sort(successes->begin(), successes->end());  // bisection tries batches out of order
    }
    if (report) report(batch, result, seconds_since(t0));
    return result.fits;
  };
}

}  // namespace ltfit
