// A CPU allocator for LibTorch that keeps freed large blocks for reuse. glibc gives large blocks
// back to the kernel when they are freed (those over its mmap threshold, 32 MiB at most, always),
// so a loop that allocates the same activations again and again (a server's forward, batch after
// batch) faults and zeroes their pages anew each time: at 64 clients `ltfit serve`'s batcher spent
// a third of its time in the kernel. Telling glibc never to map blocks (M_MMAP_MAX 0) instead
// doubled the server's resident memory with ResNet-50 (its 64 MiB per-thread heaps fragment).
// This cache keeps blocks of `min_block` bytes or more when they are freed, up to `cap` bytes in
// all (the oldest are freed beyond that), and hands a kept block to an allocation that fits it with
// at most a quarter to spare; smaller blocks go to LibTorch's own allocator. Thread-safe.
#pragma once

#include <c10/core/Allocator.h>

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>

namespace ltfit {

class CpuBlockCache final : public c10::Allocator {
 public:
  struct Stats {
    std::uint64_t hits = 0;        // large allocations served from the cache
    std::uint64_t misses = 0;      // large allocations the cache could not serve
    std::uint64_t evicted = 0;     // kept blocks freed to stay within the cap
    std::size_t cached_bytes = 0;  // kept now, free for reuse
    std::size_t live_bytes = 0;    // large blocks in use now
  };

  CpuBlockCache(std::size_t cap, std::size_t min_block);
  CpuBlockCache(const CpuBlockCache&) = delete;
  CpuBlockCache& operator=(const CpuBlockCache&) = delete;
  ~CpuBlockCache() override;  // frees what it keeps; every block it gave must be freed first

  c10::DataPtr allocate(std::size_t bytes) override;
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
  Stats stats() const;

 private:
  struct Kept {
    void* base;
    std::size_t size;
  };
  // Every block starts with a header naming its cache and size; the data follows it.
  static void release(void* data);
  void keep(void* base, std::size_t size);
  void* take_kept(std::size_t size);   // a kept block that fits (moved to live), or null
  void evict_beyond(std::size_t cap);  // with mutex_ held

  std::size_t cap_;
  std::size_t min_block_;
  mutable std::mutex mutex_;
  std::list<Kept> kept_;  // newest first
  std::multimap<std::size_t, std::list<Kept>::iterator> by_size_;
  Stats stats_;
};

// Makes a process-wide CpuBlockCache LibTorch's CPU allocator (for tensors made from now on) and
// returns it; it lives until the process exits. Calling it again returns the first one.
CpuBlockCache& install_cpu_block_cache(std::size_t cap, std::size_t min_block = 1u << 20);
// The installed cache's figures; all zero when none was installed.
CpuBlockCache::Stats installed_cpu_block_cache_stats();

}  // namespace ltfit
