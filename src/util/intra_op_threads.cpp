// Per-thread OpenMP thread count: see intra_op_threads.h.
#include "ltfit/util/intra_op_threads.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>

#include <algorithm>

namespace ltfit {

namespace {

using SetNumThreads = void (*)(int);

// libgomp's (or libiomp's) omp_set_num_threads, as LibTorch loaded it; null where LibTorch
// was built without OpenMP (then at::parallel_for has no per-thread count to set).
SetNumThreads omp_set_num_threads_fn() {
  static const auto fn =
      reinterpret_cast<SetNumThreads>(::dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  return fn;
}

}  // namespace

void set_intra_op_threads_here(int threads) {
  // LibTorch sets a thread's count from its global default the first time the thread asks: asked
  // first, so that this does not override the count set below later. (ltfit's own code is built
  // without OpenMP, so only LibTorch's kernels ask.)
  (void)at::get_num_threads();
  if (SetNumThreads set = omp_set_num_threads_fn()) set(std::max(1, threads));
}

int intra_op_threads_here() { return at::get_num_threads(); }

}  // namespace ltfit
