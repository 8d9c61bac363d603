// ltfit's temporary files: see temp_files.h.
#include "ltfit/util/temp_files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstring>
#include <ctime>
#include <filesystem>

namespace ltfit {

namespace {

namespace fs = std::filesystem;

constexpr int kSlots = 64;
constexpr std::size_t kPathBytes = 4096;
constexpr int kFree = 0, kFilling = 1, kUsed = 2;

// A slot's path is written only while it is kFilling, so the handler, which reads kUsed slots
// only, never sees a half-copied path.
struct Slot {
  std::atomic<int> state{kFree};
  char path[kPathBytes] = {};
};
Slot g_slots[kSlots];

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool all_of(const std::string& s, std::size_t from, std::size_t count, int (*pred)(int)) {
  if (from + count > s.size()) return false;
  for (std::size_t i = from; i < from + count; ++i) {
    if (!pred(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

// `.<target>.XXXXXX.tmp` (AtomicFile, mkostemps).
bool is_atomic_temp(const std::string& name, const std::string& target) {
  constexpr std::size_t kTail = 11;  // ".XXXXXX.tmp"
  if (name.size() < 1 + kTail + 1 || name[0] != '.' || !ends_with(name, ".tmp")) return false;
  const std::size_t dot = name.size() - kTail;
  if (name[dot] != '.' || !all_of(name, dot + 1, 6, [](int c) { return std::isalnum(c); })) {
    return false;
  }
  return target.empty() || (dot - 1 == target.size() && name.compare(1, dot - 1, target) == 0);
}

// `<target>.partial-<16 hex>` (download.cpp's PartialFile).
bool is_partial_download(const std::string& name, const std::string& target) {
  constexpr std::size_t kTail = 25;  // ".partial-" + 16 hex digits
  if (name.size() < kTail + 1) return false;
  const std::size_t at = name.size() - kTail;
  if (name.compare(at, 9, ".partial-") != 0 ||
      !all_of(name, at + 9, 16, [](int c) { return std::isxdigit(c); })) {
    return false;
  }
  return target.empty() || (at == target.size() && name.compare(0, at, target) == 0);
}

// Unlinks `path` if it is a regular file, unchanged for `min_age` s, and no writer holds it.
bool remove_if_stale(const std::string& path, int min_age) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  bool stale = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
               std::time(nullptr) - st.st_mtime >= min_age && ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  // The name must still be that file (not replaced since it was opened).
  struct stat now {};
  stale = stale && ::lstat(path.c_str(), &now) == 0 && now.st_ino == st.st_ino &&
          now.st_dev == st.st_dev && ::unlink(path.c_str()) == 0;
  ::close(fd);
  return stale;
}

}  // namespace

int register_live_temp_file(const std::string& path) {
  if (path.size() >= kPathBytes) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expected, kFilling)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].state.store(kUsed, std::memory_order_release);
    return i;
  }
  return -1;
}

void unregister_live_temp_file(int slot) {
  if (slot >= 0 && slot < kSlots) g_slots[slot].state.store(kFree, std::memory_order_release);
}

void remove_live_temp_files() noexcept {
  for (Slot& slot : g_slots) {
    if (slot.state.load(std::memory_order_acquire) == kUsed) ::unlink(slot.path);
  }
}

bool is_temp_file_name(const std::string& name, const std::string& target) {
  return is_atomic_temp(name, target) || is_partial_download(name, target);
}

std::vector<std::string> remove_stale_temp_files(const std::string& dir, const std::string& target,
                                                 int min_age_seconds) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (fs::directory_iterator it(dir.empty() ? "." : dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!is_temp_file_name(name, target)) continue;
    if (remove_if_stale(it->path().string(), min_age_seconds))
      removed.push_back(it->path().string());
  }
  return removed;
}

}  // namespace ltfit
