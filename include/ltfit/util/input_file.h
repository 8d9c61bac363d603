// Reading small text inputs named on the command line (config files, experiment plans) without
// letting the name decide how much is read or whether the read ends.
//
// The file is opened with O_NONBLOCK (a FIFO does not block the open), checked with fstat before
// anything is read (only regular files, at most `max_bytes`), then read up to max_bytes + 1
// bytes (a file growing while read is still refused). `/dev/zero`, a FIFO, a directory, a socket
// or a 2 GB file is a ConfigError (exit 2) naming the file and what it is. Thread-safe.
#pragma once

#include <cstddef>
#include <string>

namespace ltfit {

inline constexpr std::size_t kMaxInputFileBytes = 1 << 20;  // 1 MiB: configs and plans are KBs

// The whole content of the regular file `path`; `what` names it in messages ("config file").
// Throws ConfigError (exit 2) if it is missing, not a regular file, unreadable or too large.
std::string read_input_file(const std::string& path, const std::string& what,
                            std::size_t max_bytes = kMaxInputFileBytes);

}  // namespace ltfit
