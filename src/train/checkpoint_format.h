// The checkpoint format's name and version, shared by checkpoint_save.cpp (which writes them into
// every file) and checkpoint.cpp (which refuses a file without them) (private to src/train).
#pragma once

#include <cstdint>

namespace ltfit::detail {

// 3: a torch.save archive of plain values and tensors. 1 and 2 were TorchScript archives
// (LibTorch's serialize::OutputArchive), which only `ltfit convert-checkpoint --trust-code` reads.
inline constexpr std::int64_t kCheckpointFormatVersion = 3;
inline constexpr const char* kCheckpointFormatName = "ltfit.checkpoint";

}  // namespace ltfit::detail
