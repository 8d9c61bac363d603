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
  // LibTorch sets a thread's count from its global default the first time the thread asks
  // (at::internal::lazy_init_num_threads, one flag per thread in each library that inlines it):
  // both asked first, so neither overrides the count set below later.
  at::internal::lazy_init_num_threads();
  (void)at::get_num_threads();
  if (SetNumThreads set = omp_set_num_threads_fn()) set(std::max(1, threads));
}

int intra_op_threads_here() { return at::get_num_threads(); }

}  // namespace ltfit
