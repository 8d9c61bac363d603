// Joining a data-parallel run: see dist_session.h.
#include "ltfit/jobs/dist_session.h"

#include <spdlog/spdlog.h>
#include <torch/cuda.h>

#include <ATen/Parallel.h>

#include "ltfit/data/loader.h"
#include "ltfit/util/device.h"
#include "ltfit/util/error.h"
#include "ltfit/util/log.h"

namespace ltfit {

namespace {

// train.device for this rank: a bare "cuda" (or auto on a CUDA machine) is the rank's own GPU.
torch::Device rank_device(const DeviceRequest& configured, const LaunchInfo& launch) {
  torch::Device device = resolve_device(configured);
  if (!device.is_cuda() || !configured.any_gpu() || !launch.launched()) return device;
  const auto gpus = static_cast<int>(torch::cuda::device_count());
  if (launch.local_rank >= gpus) {
    throw ConfigError("train.device: local rank " + std::to_string(launch.local_rank) +
                          " needs GPU cuda:" + std::to_string(launch.local_rank) + " but " +
                          std::to_string(gpus) + " GPU(s) are visible",
                      "launch at most one process per GPU (--nproc-per-node " +
                          std::to_string(gpus) + "), or set train.device: cpu");
  }
  return {torch::kCUDA, static_cast<c10::DeviceIndex>(launch.local_rank)};
}

}  // namespace

std::string DistSession::backend_name() const {
  return group ? dist_backend_name(group->backend()) : std::string("none");
}

int DistSession::loader_workers(int configured) const {
  const int workers = configured > 0 ? configured : default_worker_count();
  return std::max(1, workers / std::max(1, launch.local_world_size));
}

DistSession start_dist_session(const Config& config) {
  DistSession session;
  session.launch = detect_launch();
  const LaunchInfo& launch = session.launch;
  session.device = rank_device(config.train.device, launch);
  if (!should_join(launch, config.dist.backend)) {
    if (launch.launched() && launch.world_size > 1) {
      spdlog::warn("{}, but dist.backend is off: this process trains alone",
                   describe_launch(launch));
    }
    return session;
  }
  if (launch.rank != 0) {
    set_log_prefix("[rank " + std::to_string(launch.rank) + "/" +
                   std::to_string(launch.world_size) + "] ");
  }
  check_global_batch(config.data.batch_size, launch.world_size);
  // The machine's cores, shared by its ranks (this also replaces torchrun's OMP_NUM_THREADS=1,
  // which would leave a single rank per machine with one thread).
  at::set_num_threads(std::max(1, available_cores() / launch.local_world_size));
  const DistBackend backend = resolve_backend(config.dist.backend, session.device);
  spdlog::info("joining a data-parallel run: {}, backend {}, timeout {} s", describe_launch(launch),
               dist_backend_name(backend), config.dist.timeout_seconds);
  session.group = std::make_unique<DistGroup>(launch, config.dist, backend, session.device);
  spdlog::info("joined: {} rank(s), global batch {} ({} per rank), {} intra-op thread(s)",
               launch.world_size, config.data.batch_size,
               config.data.batch_size / launch.world_size, at::get_num_threads());
  return session;
}

}  // namespace ltfit
