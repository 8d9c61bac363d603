// Catch2 entry point for the whole suite. ltfit's CUDA half is loaded first, as ltfit's main()
// does (ltfit/util/cuda_half.h): the one built beside the suite, unless LTFIT_CUDA_PLUGIN names
// another.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>

#include "ltfit/util/cuda_half.h"

int main(int argc, char** argv) {
#ifdef LTFIT_TEST_CUDA_PLUGIN
  ::setenv("LTFIT_CUDA_PLUGIN", LTFIT_TEST_CUDA_PLUGIN, /*overwrite=*/0);
#endif
  ltfit::load_cuda_half();
  return Catch::Session().run(argc, argv);
}
