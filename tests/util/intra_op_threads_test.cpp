// A thread's own OpenMP thread count (util/intra_op_threads.h): set for the calling thread alone,
// given back by the scope guard, honoured by the teams LibTorch starts and libgomp keeps, and
// a wide thread for the rare wide work of a narrow one.
#include <ATen/Parallel.h>
#include <pthread.h>
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <thread>

#include "ltfit/util/intra_op_threads.h"
#include "support/test_support.h"

using ltfit::testing::threads_named;

namespace {

// Work LibTorch splits over the calling thread's OpenMP team (a sum over 4M floats, in
// libtorch_cpu: ltfit's own code is compiled without OpenMP, so at::parallel_for inlined here
// would run serially whatever the count).
void wide_work() { CHECK(torch::ones({1 << 22}).sum().item<double>() == double(1 << 22)); }

// Runs f on a new thread named `name`, joined at once.
template <class F>
void on_thread_named(const char* name, F f) {
  std::thread t([&] {
    pthread_setname_np(pthread_self(), name);
    f();
  });
  t.join();
}

}  // namespace

TEST_CASE("a thread's count is its own: other threads and threads started later keep theirs",
          "[util][intra_op_threads]") {
  const int here = ltfit::intra_op_threads_here();
  int narrowed = 0, fresh = 0;
  std::thread([&] {
    ltfit::set_intra_op_threads_here(1);
    narrowed = ltfit::intra_op_threads_here();
  }).join();
  std::thread([&] { fresh = ltfit::intra_op_threads_here(); }).join();
  CHECK(narrowed == 1);
  CHECK(ltfit::intra_op_threads_here() == here);
  CHECK(fresh == at::get_num_threads());
  {
    const ltfit::IntraOpThreadsHere one(1);
    CHECK(ltfit::intra_op_threads_here() == 1);
  }
  CHECK(ltfit::intra_op_threads_here() == here);
  int zero = 0;
  std::thread([&] {
    ltfit::set_intra_op_threads_here(0);  // taken as 1
    zero = ltfit::intra_op_threads_here();
  }).join();
  CHECK(zero == 1);
}

TEST_CASE("a narrowed thread leaves no OpenMP helper behind, a wide one does",
          "[util][intra_op_threads]") {
  int before = 0;
  on_thread_named("ltfit-narrow", [&] {
    ltfit::set_intra_op_threads_here(1);
    wide_work();
    before = threads_named("ltfit-narrow");
  });
  CHECK(before == 1);  // itself: libgomp started no helper (it would carry the creator's name)
  if (at::get_num_threads() < 2) {
    WARN("one core: no team to compare with");
    return;
  }
  // The control: with the default count the same work starts a team whose helper stays as long
  // as its thread lives (libgomp's pool), named after it.
  int wide = 0, count = 0;
  on_thread_named("ltfit-wide", [&] {
    count = ltfit::intra_op_threads_here();
    wide_work();
    wide = threads_named("ltfit-wide");
  });
  CHECK(count == at::get_num_threads());
  CHECK(wide == count);
}

TEST_CASE("on_a_wide_thread runs at the default count from a narrow thread, exceptions included",
          "[util][intra_op_threads]") {
  const int default_count = at::get_num_threads();
  int wide = 0, after = 0;
  std::string caught;
  std::thread([&] {
    ltfit::set_intra_op_threads_here(1);
    wide = ltfit::on_a_wide_thread([] { return ltfit::intra_op_threads_here(); });
    after = ltfit::intra_op_threads_here();
    try {
      ltfit::on_a_wide_thread([]() -> int { throw std::runtime_error("boom"); });
    } catch (const std::runtime_error& e) {
      caught = e.what();
    }
  }).join();
  CHECK(wide == default_count);
  CHECK(after == 1);
  CHECK(caught == "boom");
}
