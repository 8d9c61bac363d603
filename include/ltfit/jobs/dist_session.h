// A training command's place in a data-parallel run: the launch it was started by, the process
// group it joined (none for a single process), and the share of the machine it may use.
//
// Under torchrun, srun or RANK/WORLD_SIZE variables (dist/launch.h) with dist.backend not off,
// a world of more than one process joins a c10d group; `train.device: cuda` (or auto on a CUDA
// machine) means this rank's GPU, cuda:$LOCAL_RANK; intra-op threads and loader workers are
// divided by the processes on the machine (LOCAL_WORLD_SIZE), so N ranks never oversubscribe
// it. Ranks other than 0 log with a "[rank r/N]" prefix. Not thread-safe.
#pragma once

#include <memory>
#include <string>

#include <torch/types.h>

#include "ltfit/config/config.h"
#include "ltfit/data/shard.h"
#include "ltfit/dist/group.h"
#include "ltfit/dist/launch.h"

namespace ltfit {

struct DistSession {
  LaunchInfo launch;
  std::unique_ptr<DistGroup> group;  // null: one process
  torch::Device device = torch::kCPU;

  bool active() const { return group != nullptr; }
  int rank() const { return group ? group->rank() : 0; }
  int world_size() const { return group ? group->size() : 1; }
  bool is_root() const { return rank() == 0; }
  Shard shard() const { return {rank(), world_size()}; }
  std::string backend_name() const;  // "gloo" | "nccl" | "none"
  // Loader workers for this process: data.workers (auto: one per core) / LOCAL_WORLD_SIZE.
  int loader_workers(int configured) const;
};

// Reads the launch from the environment, resolves train.device for this rank, and joins the
// group when there is one (dist.backend, dist.timeout_seconds). Throws ConfigError (exit 2) for
// bad launcher variables, a global batch that does not split over the ranks, or a GPU index
// this machine lacks; RuntimeError (exit 5) when the group cannot be joined.
DistSession start_dist_session(const Config& config);

}  // namespace ltfit
