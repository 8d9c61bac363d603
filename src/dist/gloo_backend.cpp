// ProcessGroupGloo: the only file that includes ProcessGroupGloo.hpp (it needs gloo's headers,
// from Debian's libgloo-dev, which CMake checks at configure time).
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <cstdlib>

#include "backends.h"

namespace ltfit::dist_internal {

c10::intrusive_ptr<c10d::Backend> make_gloo(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                            int size, std::chrono::milliseconds timeout,
                                            const std::string& interface, const std::string& host) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  std::string name = interface;
  if (name.empty()) {
    if (const char* env = std::getenv("GLOO_SOCKET_IFNAME")) name = env;
  }
  const bool loopback = host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
  if (!name.empty()) {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(name));
  } else if (loopback) {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(host));
  } else {
    options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  options->threads = 2;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
}

}  // namespace ltfit::dist_internal
