// Who may use the CPU's cores in `ltfit serve`: decoding images (many at once) or the model
// (alone). On a CPU the model's forward spreads over every core in lockstep parallel regions; a
// decoding thread that takes one of those cores stalls the whole region at its barrier. So decodes
// take the gate shared, the model exclusive, and a model waiting for the gate keeps new decodes out
// until it has run (writer preference), so a stream of uploads cannot starve it. Measured on two
// cores with 64 clients (ResNet-18, 224 px): 23 images/s with decodes beside the model, more with
// the gate (bench/serve_load.sh). Satisfies SharedMutex for std::shared_lock and std::unique_lock.
// Internal to src/serve; thread-safe.
#pragma once

#include <condition_variable>
#include <mutex>

namespace ltfit {

class ComputeGate {
 public:
  void lock_shared() {
    std::unique_lock<std::mutex> guard(mutex_);
    changed_.wait(guard, [&] { return !exclusive_ && exclusive_waiting_ == 0; });
    ++shared_;
  }
  void unlock_shared() {
    std::lock_guard<std::mutex> guard(mutex_);
    if (--shared_ == 0) changed_.notify_all();
  }
  void lock() {
    std::unique_lock<std::mutex> guard(mutex_);
    ++exclusive_waiting_;
    changed_.wait(guard, [&] { return !exclusive_ && shared_ == 0; });
    --exclusive_waiting_;
    exclusive_ = true;
  }
  void unlock() {
    std::lock_guard<std::mutex> guard(mutex_);
    exclusive_ = false;
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int shared_ = 0;
  int exclusive_waiting_ = 0;
  bool exclusive_ = false;
};

}  // namespace ltfit
