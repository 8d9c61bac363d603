// The CPU allocator that keeps freed large blocks (cpu_block_cache.h).
#include "ltfit/util/cpu_block_cache.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <atomic>
#include <iterator>
#include <new>

namespace ltfit {
namespace {

// The header before each block's data: 64 bytes, so the data keeps LibTorch's 64-byte alignment.
struct alignas(64) BlockHeader {
  CpuBlockCache* owner;
  std::size_t size;  // the data's bytes
};
constexpr std::size_t kHeader = sizeof(BlockHeader);
static_assert(kHeader == 64);

BlockHeader* header_of(void* data) {
  return reinterpret_cast<BlockHeader*>(static_cast<char*>(data) - kHeader);
}

}  // namespace

CpuBlockCache::CpuBlockCache(std::size_t cap, std::size_t min_block)
    : cap_(cap), min_block_(min_block) {}

CpuBlockCache::~CpuBlockCache() {
  std::lock_guard<std::mutex> lock(mutex_);
  evict_beyond(0);
}

c10::DataPtr CpuBlockCache::allocate(std::size_t bytes) {
  void* base = bytes >= min_block_ ? take_kept(bytes) : nullptr;
  if (base == nullptr) {
    base = c10::alloc_cpu(bytes + kHeader);  // throws c10::Error when out of memory
    new (base) BlockHeader{this, bytes};
    if (bytes >= min_block_) {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.misses;
      stats_.live_bytes += bytes;
    }
  }
  void* data = static_cast<char*>(base) + kHeader;
  return {data, data, &release, c10::Device(c10::DeviceType::CPU)};
}

void CpuBlockCache::release(void* data) {
  if (data == nullptr) return;
  BlockHeader* header = header_of(data);
  CpuBlockCache* owner = header->owner;
  if (header->size < owner->min_block_) {
    c10::free_cpu(header);
    return;
  }
  owner->keep(header, header->size);
}

void CpuBlockCache::keep(void* base, std::size_t size) {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.live_bytes -= size;
  if (size > cap_) {
    ++stats_.evicted;
    c10::free_cpu(base);
    return;
  }
  kept_.push_front({base, size});
  by_size_.emplace(size, kept_.begin());
  stats_.cached_bytes += size;
  evict_beyond(cap_);
}

void* CpuBlockCache::take_kept(std::size_t size) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto fit = by_size_.lower_bound(size);
  if (fit == by_size_.end() || fit->first > size + size / 4) return nullptr;
  const Kept kept = *fit->second;
  kept_.erase(fit->second);
  by_size_.erase(fit);
  // The header keeps the block's own size, which may exceed what this allocation asked for.
  stats_.cached_bytes -= kept.size;
  stats_.live_bytes += kept.size;
  ++stats_.hits;
  return kept.base;
}

void CpuBlockCache::evict_beyond(std::size_t cap) {
  while (stats_.cached_bytes > cap && !kept_.empty()) {
    const Kept oldest = kept_.back();
    auto [first, last] = by_size_.equal_range(oldest.size);
    for (auto it = first; it != last; ++it) {
      if (it->second == std::prev(kept_.end())) {
        by_size_.erase(it);
        break;
      }
    }
    kept_.pop_back();
    stats_.cached_bytes -= oldest.size;
    ++stats_.evicted;
    c10::free_cpu(oldest.base);
  }
}

CpuBlockCache::Stats CpuBlockCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

namespace {
std::atomic<CpuBlockCache*> g_installed{nullptr};
}

CpuBlockCache& install_cpu_block_cache(std::size_t cap, std::size_t min_block) {
  // Never destroyed: tensors made with it may outlive every other object of the process.
  static CpuBlockCache* const cache = [&] {
    auto* made = new CpuBlockCache(cap, min_block);
    c10::SetCPUAllocator(made, /*priority=*/1);
    g_installed.store(made);
    return made;
  }();
  return *cache;
}

CpuBlockCache::Stats installed_cpu_block_cache_stats() {
  const CpuBlockCache* cache = g_installed.load();
  return cache != nullptr ? cache->stats() : CpuBlockCache::Stats{};
}

}  // namespace ltfit
