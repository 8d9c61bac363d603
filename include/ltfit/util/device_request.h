// A device as a config or a command line asks for it (`train.device`, `--device`): parsed once
// from its text, resolved to a torch::Device where the run starts (device.h). Torch-free, so
// config.h can hold one. Plain value, thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace ltfit {

struct DeviceRequest {
  enum class Kind {
    kAuto,  // the first GPU when one is visible, else the CPU
    kCpu,
    kCuda,  // cuda (index -1) or cuda:N
  };
  Kind kind = Kind::kAuto;
  int index = -1;  // kCuda: the GPU asked for; -1: a bare `cuda` (GPU 0, a rank's own GPU)

  // auto or a bare `cuda`: in a data-parallel run each rank takes its own GPU (cuda:LOCAL_RANK).
  bool any_gpu() const { return kind == Kind::kAuto || (kind == Kind::kCuda && index < 0); }
  bool operator==(const DeviceRequest&) const = default;
};

// "auto" | "cpu" | "cuda" | "cuda:N" (N a GPU index below 1024). Anything else is a ChoiceError
// (a ConfigError, exit 2) naming `key`, "expected one of auto, cpu, cuda, cuda:N".
DeviceRequest parse_device_request(std::string_view text, const std::string& key);

// The request's text, as parse_device_request reads it back.
std::string device_request_name(const DeviceRequest& request);

}  // namespace ltfit
