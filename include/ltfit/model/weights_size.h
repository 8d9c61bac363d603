// How large a torchvision weight file may be: a download stops at that many bytes, so a server
// that streams more (a wrong file, a misconfigured mirror) is refused as soon as it passes the
// size, not after writing all of it to disk.
//
// The registry's files have the size torchvision publishes with each weight (`meta["_file_size"]`,
// MiB to three decimals); the bound is that size rounded up, at most 524 bytes above the exact
// size (resnet18-f37072fd.pth: 44.661 MiB, exactly 46830571 bytes, bound 46830977). Any other
// file name gets kMaxWeightsBytes (4 GiB), a generous cap: torchvision's largest is 2.4 GiB.
#pragma once

#include <cstdint>
#include <string>

namespace ltfit {

inline constexpr std::int64_t kMaxWeightsBytes = std::int64_t{4} << 30;  // 4 GiB

// The most bytes `file_name` (a torchvision file name, no folder) may have.
std::int64_t torchvision_weights_max_bytes(const std::string& file_name);

// Whether `file_name` has its own published size (false: kMaxWeightsBytes applies).
bool torchvision_weights_size_known(const std::string& file_name);

}  // namespace ltfit
