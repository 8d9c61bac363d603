// The command prefix that caps an `ltfit` child's address space (default 4 GiB: plenty for a small
// run, LibTorch maps ~2.5 GB), so a runaway allocation fails instead of taking the machine.
#pragma once

#include <cstdint>
#include <string>

namespace ltfit::testing {

// Empty in ASan builds: the child is an ASan binary too, and ASan reserves terabytes of address
// space for its shadow memory at start-up, which no such cap allows (the child aborts before
// main). Tests whose point is the cap itself are left out of the ASan step instead
// (scripts/ci_sanitizers.sh).
inline std::string child_address_space_cap(std::uint64_t bytes = std::uint64_t(4) << 30) {
#if defined(__SANITIZE_ADDRESS__)
  (void)bytes;
  return "";
#else
  return "prlimit --as=" + std::to_string(bytes);
#endif
}

}  // namespace ltfit::testing
