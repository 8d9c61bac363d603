// The NCCL process group on a GPU ([cuda]: run by scripts/run_cuda_tests.sh and gpu_check.sh,
// skipped visibly without a GPU): a world of one joins through a TCPStore on 127.0.0.1, sums
// and broadcasts CUDA tensors, and shares a string.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ltfit/dist/group.h"

namespace {

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

TEST_CASE("NCCL: a world of one on a GPU sums, broadcasts and shares text", "[dist][cuda]") {
  REQUIRE(torch::cuda::is_available());
  ltfit::LaunchInfo launch;
  launch.launcher = "env";
  launch.master_addr = "127.0.0.1";
  launch.master_port = free_port();
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
