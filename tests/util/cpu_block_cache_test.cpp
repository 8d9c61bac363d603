// The CPU block cache (util/cpu_block_cache.h): a freed large block is handed to the next
// allocation that fits it, small blocks are not kept, the cap frees the oldest kept blocks, and
// LibTorch's raw allocations (oneDNN's buffers) go through the same deleter. Instances made here
// are not installed, so the rest of the suite keeps LibTorch's allocator.
#include <catch2/catch.hpp>

#include <cstring>
#include <thread>
#include <vector>

#include "ltfit/util/cpu_block_cache.h"

using ltfit::CpuBlockCache;

namespace {
constexpr std::size_t kBlockMiB = 1u << 20;
}

TEST_CASE("the block cache hands a freed large block to the next allocation that fits it",
          "[util][block_cache]") {
  CpuBlockCache cache(64 * kBlockMiB, kBlockMiB);
  void* first = nullptr;
  {
    c10::DataPtr block = cache.allocate(8 * kBlockMiB);
    first = block.get();
    REQUIRE(first != nullptr);
    CHECK(reinterpret_cast<std::uintptr_t>(first) % 64 == 0);
    std::memset(first, 7, 8 * kBlockMiB);  // all of it is ours to write
    CHECK(cache.stats().live_bytes == 8 * kBlockMiB);
  }
  CHECK(cache.stats().cached_bytes == 8 * kBlockMiB);
  {
    c10::DataPtr again = cache.allocate(7 * kBlockMiB);  // fits, with under a quarter to spare
    CHECK(again.get() == first);
    CHECK(cache.stats().hits == 1);
    CHECK(cache.stats().cached_bytes == 0);
    c10::DataPtr smaller = cache.allocate(2 * kBlockMiB);  // would waste too much of a kept block
    CHECK(smaller.get() != first);
  }
  const CpuBlockCache::Stats s = cache.stats();
  CHECK(s.misses == 2);
  CHECK(s.live_bytes == 0);
  CHECK(s.cached_bytes == 10 * kBlockMiB);
}

TEST_CASE("the block cache keeps no small block and frees the oldest beyond its cap",
          "[util][block_cache]") {
  CpuBlockCache cache(10 * kBlockMiB, kBlockMiB);
  { c10::DataPtr small = cache.allocate(4096); }
  CHECK(cache.stats().cached_bytes == 0);
  CHECK(cache.stats().misses == 0);
  void* oldest = nullptr;
  {
    c10::DataPtr a = cache.allocate(4 * kBlockMiB);
    c10::DataPtr b = cache.allocate(4 * kBlockMiB);
    c10::DataPtr c = cache.allocate(4 * kBlockMiB);
    oldest = a.get();
    a.clear();  // freed first: the oldest kept
  }
  CHECK(cache.stats().cached_bytes == 8 * kBlockMiB);
  CHECK(cache.stats().evicted == 1);
  c10::DataPtr d = cache.allocate(4 * kBlockMiB);  // b's or c's block: a's was freed
  CHECK(cache.stats().hits == 1);
  CHECK(d.get() != oldest);
  { c10::DataPtr huge = cache.allocate(11 * kBlockMiB); }  // over the cap: never kept
  CHECK(cache.stats().cached_bytes == 4 * kBlockMiB);
}

TEST_CASE("the block cache serves raw allocations and many threads at once",
          "[util][block_cache]") {
  CpuBlockCache cache(256 * kBlockMiB, kBlockMiB);
  void* raw = cache.raw_allocate(3 * kBlockMiB);
  std::memset(raw, 1, 3 * kBlockMiB);
  cache.raw_deallocate(raw);
  void* small = cache.raw_allocate(100);
  cache.raw_deallocate(small);
  CHECK(cache.stats().cached_bytes == 3 * kBlockMiB);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&cache, t] {
      for (int i = 0; i < 200; ++i) {
        const std::size_t bytes = (1 + static_cast<std::size_t>((i + t) % 5)) * kBlockMiB;
        c10::DataPtr block = cache.allocate(bytes);
        static_cast<char*>(block.get())[bytes - 1] = 1;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const CpuBlockCache::Stats s = cache.stats();
  CHECK(s.live_bytes == 0);
  CHECK(s.hits + s.misses == 801);
  CHECK(s.hits > 700);  // the same few sizes, over and over
}
