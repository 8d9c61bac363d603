// serve's /metrics: see serve_metrics.h.
#include "serve/serve_metrics.h"

#include <spdlog/fmt/fmt.h>

namespace ltfit {

namespace {

// The batcher's and the block cache's counters and gauges.
std::string batcher_and_cache_gauges(const Batcher::Stats& batches,
                                     const CpuBlockCache::Stats& cache, double uptime) {
  std::string out;
  out += fmt::format(
      "# HELP ltfit_queue_depth Images waiting for the model.\n# TYPE ltfit_queue_depth gauge\n"
      "ltfit_queue_depth {}\n"
      "# HELP ltfit_images_total Images run through the model.\n"
      "# TYPE ltfit_images_total counter\nltfit_images_total {}\n"
      "# HELP ltfit_images_per_second Images run through the model per second since the start.\n"
      "# TYPE ltfit_images_per_second gauge\nltfit_images_per_second {:.3f}\n"
      "# HELP ltfit_queue_refused_total Images refused because the queue was full (503).\n"
      "# TYPE ltfit_queue_refused_total counter\nltfit_queue_refused_total {}\n"
      "# HELP ltfit_expired_total Images dropped unrun: queued past their request's deadline.\n"
      "# TYPE ltfit_expired_total counter\nltfit_expired_total {}\n"
      "# HELP ltfit_model_seconds_total Time the model took on the batches, all together.\n"
      "# TYPE ltfit_model_seconds_total counter\nltfit_model_seconds_total {:.6f}\n",
      batches.queued, batches.images, uptime > 0 ? batches.images / uptime : 0.0, batches.refused,
      batches.expired, batches.run_seconds);
  out += fmt::format(
      "# HELP ltfit_block_cache_bytes Freed model memory kept for the next batch (--cache-mb).\n"
      "# TYPE ltfit_block_cache_bytes gauge\nltfit_block_cache_bytes {}\n"
      "# HELP ltfit_block_cache_live_bytes Large CPU blocks in use now.\n"
      "# TYPE ltfit_block_cache_live_bytes gauge\nltfit_block_cache_live_bytes {}\n"
      "# HELP ltfit_block_cache_hits_total Large allocations served from kept memory.\n"
      "# TYPE ltfit_block_cache_hits_total counter\nltfit_block_cache_hits_total {}\n"
      "# HELP ltfit_block_cache_misses_total Large allocations of new memory.\n"
      "# TYPE ltfit_block_cache_misses_total counter\nltfit_block_cache_misses_total {}\n",
      cache.cached_bytes, cache.live_bytes, cache.hits, cache.misses);
  return out;
}

}  // namespace

std::string ServeMetrics::text(const Batcher::Stats& batches, const CpuBlockCache::Stats& cache,
                               double uptime) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out =
      "# HELP ltfit_requests_total HTTP requests answered, by status.\n"
      "# TYPE ltfit_requests_total counter\n";
  for (const auto& [status, n] : by_status_) {
    out += fmt::format("ltfit_requests_total{{status=\"{}\"}} {}\n", status, n);
  }
  out +=
      "# HELP ltfit_request_seconds Time from a request's parse to its answer.\n"
      "# TYPE ltfit_request_seconds histogram\n";
  std::int64_t cumulative = 0;
  for (std::size_t b = 0; b < kServeLatencyBuckets.size(); ++b) {
    cumulative += latency_[b];
    out += fmt::format("ltfit_request_seconds_bucket{{le=\"{}\"}} {}\n", kServeLatencyBuckets[b],
                       cumulative);
  }
  cumulative += latency_.back();
  out += fmt::format("ltfit_request_seconds_bucket{{le=\"+Inf\"}} {}\n", cumulative);
  out += fmt::format("ltfit_request_seconds_sum {}\nltfit_request_seconds_count {}\n", latency_sum_,
                     latency_count_);
  out +=
      "# HELP ltfit_batch_size Images run through the model together.\n"
      "# TYPE ltfit_batch_size histogram\n";
  std::int64_t batches_cumulative = 0, images = 0;
  for (std::size_t size = 1; size < batches.batch_sizes.size(); ++size) {
    batches_cumulative += batches.batch_sizes[size];
    images += batches.batch_sizes[size] * static_cast<std::int64_t>(size);
    out += fmt::format("ltfit_batch_size_bucket{{le=\"{}\"}} {}\n", size, batches_cumulative);
  }
  out += fmt::format("ltfit_batch_size_bucket{{le=\"+Inf\"}} {}\n", batches_cumulative);
  out += fmt::format("ltfit_batch_size_sum {}\nltfit_batch_size_count {}\n", images,
                     batches_cumulative);
  out += batcher_and_cache_gauges(batches, cache, uptime);
  return out;
}

}  // namespace ltfit
