// Header checks over a sample list; see readable_images.h.
#include "ltfit/data/readable_images.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>

#include "data/decode.h"

namespace ltfit {

namespace {

// Joins its threads when it goes out of scope, however the scope is left.
struct JoinedThreads {
  std::vector<std::thread> threads;
  ~JoinedThreads() {
    for (auto& t : threads) t.join();
  }
};

}  // namespace

ReadableImages check_readable(const std::vector<Sample>& samples, const ImageLimits& limits,
                              int threads) {
  std::vector<std::string> reasons(samples.size());
  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  std::exception_ptr error;
  const auto body = [&] {
    try {
      for (std::size_t i = next++; i < samples.size(); i = next++) {
        reasons[i] = probe_image_file(samples[i], limits);
      }
    } catch (...) {
      std::lock_guard lock(mutex);
      if (!error) error = std::current_exception();
      next = samples.size();
    }
  };
  {
    JoinedThreads pool;
    const int extra = std::min<int>(std::max(threads, 1), static_cast<int>(samples.size())) - 1;
    try {
      for (int t = 0; t < extra; ++t) pool.threads.emplace_back(body);
    } catch (const std::system_error&) {  // fewer threads: the caller's does the rest
    }
    body();
  }
  if (error) std::rethrow_exception(error);
  ReadableImages result;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto position = static_cast<std::int64_t>(i);
    if (reasons[i].empty()) {
      result.readable.push_back(position);
    } else {
      result.unreadable.push_back({position, std::move(reasons[i])});
    }
  }
  return result;
}

std::int64_t first_readable(const std::vector<Sample>& samples, const ImageLimits& limits) {
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (probe_image_file(samples[i], limits).empty()) return static_cast<std::int64_t>(i);
  }
  return -1;
}

}  // namespace ltfit
