// A process group of a data-parallel run: torch's c10d (ProcessGroupGloo on CPU tensors,
// ProcessGroupNCCL on CUDA tensors), joined through a TCPStore rendezvous at MASTER_ADDR:PORT.
//
// Every call is a collective: each rank must make the same calls in the same order with tensors
// of the same shapes and dtypes, or the group waits until dist.timeout_seconds and fails. A
// collective that fails (a rank died: "Connection closed by peer"; a rank stopped answering: the
// timeout) throws RuntimeError (exit 5) naming this rank. The store has no authentication: its
// port must be on a trusted network (rank 0 binds it to MASTER_ADDR only, not to every
// interface). Not thread-safe: one thread drives a group.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "ltfit/config/config.h"
#include "ltfit/dist/launch.h"

namespace ltfit {

class DistGroup {
 public:
  // Joins the group `launch` describes with `backend` (gloo or nccl; resolve_backend() first).
  // `device` is where collectives run (NCCL: this rank's GPU). Throws RuntimeError (exit 5) when
  // the rendezvous or the group cannot be set up within config.timeout_seconds, ConfigError for
  // NCCL in a build without it.
  DistGroup(const LaunchInfo& launch, const DistConfig& config, DistBackend backend,
            const torch::Device& device);
  ~DistGroup();
  DistGroup(const DistGroup&) = delete;
  DistGroup& operator=(const DistGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  DistBackend backend() const { return backend_kind_; }
  // Where tensors given to collectives must live.
  const torch::Device& device() const { return device_; }

  // Sums each tensor over the ranks, in place.
  void all_reduce_sum(std::vector<torch::Tensor>& tensors);
  // Copies rank `root`'s tensors into every rank's, in place.
  void broadcast(std::vector<torch::Tensor>& tensors, int root = 0);
  // True on every rank when `local` is true on any.
  bool any(bool local);
  // Rank `root`'s `text` on every rank (at most `max_bytes`; RuntimeError beyond).
  std::string broadcast_string(const std::string& text, int root = 0,
                               std::int64_t max_bytes = std::int64_t{1} << 20);
  // Returns when every rank has called it.
  void barrier();

 private:
  struct Impl;
  // The CUDA device's index ("cuda" without one means 0).
  int cuda_index() const { return device_.index() < 0 ? 0 : device_.index(); }
  std::unique_ptr<Impl> impl_;
  int rank_ = 0;
  int size_ = 1;
  DistBackend backend_kind_ = DistBackend::kGloo;
  torch::Device device_ = torch::kCPU;
  std::string where_;  // "rank r/N" for messages
};

// The backend a run uses: `configured` unless auto (nccl for a CUDA device, gloo otherwise).
DistBackend resolve_backend(DistBackend configured, const torch::Device& device);

// Whether this process should join a group: launched, backend not off, and a world of more
// than one process or a backend named explicitly (a world of one over NCCL tests the path).
bool should_join(const LaunchInfo& launch, DistBackend configured);

}  // namespace ltfit
