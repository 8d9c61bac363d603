// Seconds on the steady clock, as the trainer, the jobs and the study time their phases.
#pragma once

#include <chrono>

namespace ltfit {

// Seconds from `start` to now on the steady clock.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace ltfit
