// Parsing and naming device requests: see device_request.h.
#include "ltfit/util/device_request.h"

#include <vector>

#include "ltfit/util/choices.h"

namespace ltfit {

namespace {

constexpr int kMaxGpuIndex = 1023;

}  // namespace

DeviceRequest parse_device_request(std::string_view text, const std::string& key) {
  if (text == "auto") return {};
  if (text == "cpu") return {DeviceRequest::Kind::kCpu, -1};
  if (text == "cuda") return {DeviceRequest::Kind::kCuda, -1};
  if (text.size() > 5 && text.size() <= 9 && text.substr(0, 5) == "cuda:") {
    int index = 0;
    bool digits = true;
    for (const char c : text.substr(5)) {
      digits = digits && c >= '0' && c <= '9';
      if (digits) index = index * 10 + (c - '0');
    }
    if (digits && index <= kMaxGpuIndex) return {DeviceRequest::Kind::kCuda, index};
  }
  const std::vector<std::string> names{"auto", "cpu", "cuda"};
  const std::string near = closest(text, names);
  throw ChoiceError(
      key, "one of auto, cpu, cuda, cuda:N", std::string(text),
      near.empty() ? "cuda:N names GPU N (0, 1, ...)" : "did you mean '" + near + "'?");
}

std::string device_request_name(const DeviceRequest& request) {
  switch (request.kind) {
    case DeviceRequest::Kind::kAuto:
      return "auto";
    case DeviceRequest::Kind::kCpu:
      return "cpu";
    case DeviceRequest::Kind::kCuda:
      break;
  }
  return request.index < 0 ? "cuda" : "cuda:" + std::to_string(request.index);
}

}  // namespace ltfit
