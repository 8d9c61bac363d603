// The process group: rendezvous, backend, collectives (group.h).
#include "ltfit/dist/group.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cstring>

#include "backends.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

// A listening socket bound to `host`:`port` only (TCPStore binds every interface otherwise).
int listen_on(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    throw RuntimeError("MASTER_ADDR '" + host + "' does not resolve: " + ::gai_strerror(rc),
                       "set MASTER_ADDR to this machine's address (rank 0 runs here)");
  }
  std::string last_error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 4096) == 0) {
      ::freeaddrinfo(found);
      return fd;
    }
    last_error = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  throw RuntimeError(
      "rank 0 cannot listen on MASTER_ADDR " + host + ":" + service + ": " + last_error,
      "MASTER_ADDR must be an address of rank 0's machine and MASTER_PORT free");
}

c10::intrusive_ptr<c10d::Store> rendezvous(const LaunchInfo& launch,
                                           std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(launch.master_port);
  options.timeout = timeout;
  options.waitWorkers = false;
  const bool host = !launch.agent_store && launch.rank == 0;
  if (host) {
    options.isServer = true;
    options.numWorkers = launch.world_size;
    options.masterListenFd = listen_on(launch.master_addr, launch.master_port);
  }
  auto store = c10::make_intrusive<c10d::TCPStore>(launch.master_addr, options);
  // torchrun's store outlives a restart: each attempt has its own keys.
  return c10::make_intrusive<c10d::PrefixStore>(
      "ltfit/attempt_" + std::to_string(launch.restart_count), store);
}

}  // namespace

struct DistGroup::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::Backend> backend;
  std::chrono::milliseconds timeout{0};

  // Waits for a collective; a failure becomes RuntimeError (exit 5) naming the rank.
  void wait(const c10::intrusive_ptr<c10d::Work>& work, const std::string& where,
            const char* what) {
    try {
      work->wait(timeout);
    } catch (const std::exception& e) {
      throw RuntimeError(
          where + ": " + what + " failed (another rank stopped, or the network): " + e.what(),
          "see the other ranks' logs; the last checkpoint is kept (resume with "
          "--resume auto)");
    }
  }
};

DistGroup::DistGroup(const LaunchInfo& launch, const DistConfig& config, DistBackend backend,
                     const torch::Device& device)
    : impl_(std::make_unique<Impl>()),
      rank_(launch.rank),
      size_(launch.world_size),
      backend_kind_(backend),
      device_(device),
      where_("rank " + std::to_string(launch.rank) + "/" + std::to_string(launch.world_size)) {
  impl_->timeout =
      std::chrono::milliseconds(static_cast<std::int64_t>(config.timeout_seconds * 1000.0));
  if (backend == DistBackend::kNccl && !device.is_cuda()) {
    throw ConfigError("dist.backend: nccl needs train.device cuda",
                      "use dist.backend: gloo (or auto) to train on CPUs");
  }
  if (backend == DistBackend::kGloo) device_ = torch::kCPU;
  try {
    impl_->store = rendezvous(launch, impl_->timeout);
    if (backend == DistBackend::kNccl) {
      impl_->backend =
          dist_internal::make_nccl(impl_->store, rank_, size_, impl_->timeout, cuda_index());
    } else {
      impl_->backend = dist_internal::make_gloo(impl_->store, rank_, size_, impl_->timeout,
                                                config.interface, launch.master_addr);
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw RuntimeError(where_ + ": could not join the process group at " + launch.master_addr +
                           ":" + std::to_string(launch.master_port) + ": " + e.what(),
                       "start every rank within dist.timeout_seconds, with the same MASTER_ADDR "
                       "and MASTER_PORT, on a trusted network");
  }
  barrier();
}

DistGroup::~DistGroup() = default;

void DistGroup::all_reduce_sum(std::vector<torch::Tensor>& tensors) {
  // Every bucket's all-reduce is started before the first is waited for: they overlap.
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  try {
    for (auto& t : tensors) {
      std::vector<torch::Tensor> one{t};
      c10d::AllreduceOptions options;
      options.reduceOp = c10d::ReduceOp::SUM;
      works.push_back(impl_->backend->allreduce(one, options));
    }
  } catch (const std::exception& e) {
    throw RuntimeError(where_ + ": all-reduce failed to start: " + e.what());
  }
  for (const auto& work : works) impl_->wait(work, where_, "all-reduce");
}

void DistGroup::broadcast(std::vector<torch::Tensor>& tensors, int root) {
  for (auto& t : tensors) {
    std::vector<torch::Tensor> one{t};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    impl_->wait(impl_->backend->broadcast(one, options), where_, "broadcast");
  }
}

bool DistGroup::any(bool local) {
  std::vector<torch::Tensor> flag{
      torch::full({1}, local ? 1.0f : 0.0f, torch::TensorOptions().device(device_))};
  all_reduce_sum(flag);
  return flag[0].item<float>() > 0.0f;
}

std::string DistGroup::broadcast_string(const std::string& text, int root, std::int64_t max_bytes) {
  const auto on = torch::TensorOptions().device(device_);
  std::vector<torch::Tensor> length{
      torch::full({1}, static_cast<std::int64_t>(text.size()), on.dtype(torch::kInt64))};
  broadcast(length, root);
  const std::int64_t n = length[0].item<std::int64_t>();
  if (n < 0 || n > max_bytes) {
    throw RuntimeError(where_ + ": a shared text of " + std::to_string(n) + " bytes is too long");
  }
  torch::Tensor bytes = torch::zeros({std::max<std::int64_t>(n, 1)}, torch::kUInt8);
  if (rank_ == root) std::memcpy(bytes.data_ptr(), text.data(), text.size());
  std::vector<torch::Tensor> payload{bytes.to(device_)};
  broadcast(payload, root);
  const torch::Tensor back = payload[0].cpu();
  return std::string(reinterpret_cast<const char*>(back.data_ptr()), static_cast<std::size_t>(n));
}

void DistGroup::barrier() {
  c10d::BarrierOptions options;
  options.timeout = impl_->timeout;
  if (device_.is_cuda()) options.device_ids = {cuda_index()};
  impl_->wait(impl_->backend->barrier(options), where_, "barrier");
}

DistBackend resolve_backend(DistBackend configured, const torch::Device& device) {
  if (configured != DistBackend::kAuto) return configured;
  return device.is_cuda() ? DistBackend::kNccl : DistBackend::kGloo;
}

bool should_join(const LaunchInfo& launch, DistBackend configured) {
  if (!launch.launched() || configured == DistBackend::kOff) return false;
  return launch.world_size > 1 || configured != DistBackend::kAuto;
}

}  // namespace ltfit
