// How many threads the parallel work a thread starts may use, set for that thread alone.
#pragma once

#include <future>
#include <utility>

namespace ltfit {

// LibTorch's at::parallel_for and oneDNN's kernels start OpenMP teams as wide as the calling
// thread's OpenMP thread count, which is a per-thread setting; at::set_num_threads also changes
// the default every thread started later takes. This sets the calling thread's count only.
//
// Why it matters: libgomp keeps each team's helper threads for that thread's next region, and
// once it manages more threads than there are cores it makes every waiting helper sleep after 100
// spins instead of GOMP_SPINCOUNT, so each of a forward's hundreds of regions pays a futex
// wake-up. On two cores a second team anywhere in the process (the main thread's, from loading
// the model, and the batcher's) made `ltfit serve`'s ResNet-50 forward at batch 1 25 % slower
// (35.1 against 29.5 ms). So the threads that are not the compute thread (loader workers, HTTP
// connections, the main thread of a server) run their tensor work with 1.
//
// No-op where LibTorch uses no OpenMP. `threads` < 1 is taken as 1.
void set_intra_op_threads_here(int threads);

// The calling thread's count (at::get_num_threads()).
int intra_op_threads_here();

// f() on a thread started for it, with the default count (as wide as the cores), joined before
// this returns; its exceptions reach the caller. For the rare wide work of a thread that is
// kept narrow (a server's Grad-CAM): widening the thread itself would leave a team behind it for
// the rest of its life. Thread-local state (grad mode, inference mode) starts afresh there.
template <class F>
auto on_a_wide_thread(F&& f) {
  return std::async(std::launch::async, std::forward<F>(f)).get();
}

// Sets the calling thread's count for a scope and gives the thread its count back after it.
class IntraOpThreadsHere {
 public:
  explicit IntraOpThreadsHere(int threads) : before_(intra_op_threads_here()) {
    set_intra_op_threads_here(threads);
  }
  ~IntraOpThreadsHere() { set_intra_op_threads_here(before_); }
  IntraOpThreadsHere(const IntraOpThreadsHere&) = delete;
  IntraOpThreadsHere& operator=(const IntraOpThreadsHere&) = delete;

 private:
  int before_;
};

}  // namespace ltfit
