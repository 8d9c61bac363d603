// SHA-256 digests of files, as lower-case hex (what `sha256sum` prints).
//
// Used to verify downloaded weight files against the hash prefix in torchvision's file names.
// Thread-safe (no shared state).
#pragma once

#include <string>

namespace ltfit {

// The SHA-256 of the bytes of `data`, 64 lower-case hex characters.
std::string sha256_hex(const std::string& data);

// The SHA-256 of the file at `path`, read in chunks. Throws RuntimeError if it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace ltfit
