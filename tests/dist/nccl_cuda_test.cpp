// The NCCL process group on a GPU ([cuda]: run by scripts/run_cuda_tests.sh and gpu_check.sh,
// skipped visibly without a GPU): a world of one joins through a TCPStore on 127.0.0.1, sums
// and broadcasts CUDA tensors, and shares a string.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include "ltfit/dist/group.h"
#include "support/test_support.h"

TEST_CASE("NCCL: a world of one on a GPU sums, broadcasts and shares text", "[dist][cuda]") {
  REQUIRE(torch::cuda::is_available());
  ltfit::LaunchInfo launch;
  launch.launcher = "env";
  launch.master_addr = "127.0.0.1";
  launch.master_port = ltfit::testing::free_loopback_port();
  ltfit::DistConfig config;
  config.timeout_seconds = 60;
  ltfit::DistGroup group(launch, config, ltfit::DistBackend::kNccl, torch::Device(torch::kCUDA, 0));
  CHECK(group.size() == 1);
  std::vector<torch::Tensor> t{
      torch::arange(4, torch::TensorOptions().device(torch::kCUDA)).to(torch::kFloat32)};
  group.all_reduce_sum(t);
  CHECK(torch::equal(t[0].cpu(), torch::arange(4).to(torch::kFloat32)));
  group.broadcast(t);
  CHECK(group.any(true));
  CHECK_FALSE(group.any(false));
  CHECK(group.broadcast_string("ltfit") == "ltfit");
}
