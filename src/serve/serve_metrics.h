// serve's /metrics (serve_job.cpp): requests by status and their latency, with the batcher's
// figures, as Prometheus text. Internal to src/serve; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "ltfit/serve/batcher.h"
#include "ltfit/util/cpu_block_cache.h"

namespace ltfit {

inline constexpr std::array<double, 12> kServeLatencyBuckets = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0};

// Requests by status and their latency, for /metrics.
class ServeMetrics {
 public:
  void record(int status, double seconds) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++by_status_[status];
    std::size_t b = 0;
    while (b < kServeLatencyBuckets.size() && seconds > kServeLatencyBuckets[b]) ++b;
    ++latency_[b];
    latency_sum_ += seconds;
    ++latency_count_;
  }
  std::string text(const Batcher::Stats& batches, const CpuBlockCache::Stats& cache,
                   double uptime) const;

 private:
  mutable std::mutex mutex_;
  std::map<int, std::int64_t> by_status_;
  std::array<std::int64_t, kServeLatencyBuckets.size() + 1> latency_{};
  double latency_sum_ = 0;
  std::int64_t latency_count_ = 0;
};

}  // namespace ltfit
