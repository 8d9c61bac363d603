// A file's bytes, read whole, for the readers of formats held in memory (torch.save archives,
// safetensors). Thread-safe.
#pragma once

#include <memory>
#include <string>

namespace ltfit {

// The whole regular file at `path`: a FIFO, a device or a folder is refused before any read.
// Throws std::runtime_error with a phrase to follow the file's name ("does not exist", "is not a
// regular file", "cannot be read: ...").
std::shared_ptr<const std::string> read_regular_file(const std::string& path);

}  // namespace ltfit
