// The libFuzzer entry point of one target, chosen at compile time (LTFIT_FUZZ_TARGET, e.g.
// run_zip; see fuzz/CMakeLists.txt).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "targets.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ltfit::fuzz::init_targets();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ltfit::fuzz::LTFIT_FUZZ_TARGET(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
