// Loader implementation: its options checked, its epochs planned, and a fixed pool of worker
// threads that builds whole batches (loader_batch.cpp) ahead of the consumer, at most
// `kPrefetchPerWorker` per worker, delivered strictly in order.
//
// The worker count is fixed (worker_count_) before the first thread starts: workers never look
// at the thread list, which the constructor is still filling while they run.
#include "ltfit/data/loader.h"

#include <spdlog/spdlog.h>
#include <opencv2/core/utility.hpp>

#include <pthread.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>

#include "data/loader_state.h"
#include "ltfit/data/readable_images.h"
#include "ltfit/util/error.h"
#include "ltfit/util/intra_op_threads.h"
#include "ltfit/util/random.h"

namespace ltfit {

namespace {

constexpr int kPrefetchPerWorker = 2;

// Names the calling loader thread (top -H, gdb and perf show "ltfit-loader") and keeps its
// tensor work to itself: the workers already run side by side, and an OpenMP team of their own
// would slow the training step's (intra_op_threads.h).
void name_worker() {
  pthread_setname_np(pthread_self(), "ltfit-loader");
  set_intra_op_threads_here(1);
}

}  // namespace

Loader::Loader(std::vector<Sample> samples, LoaderOptions options)
    : samples_(std::move(samples)),
      options_(std::move(options)),
      limits_(image_limits(options_.data)),
      state_(std::make_unique<State>()) {
  LTFIT_CHECK(options_.data.batch_size > 0 && options_.data.image_size > 0, "bad loader options");
  LTFIT_CHECK(
      !options_.eval_transform || (!options_.train && !options_.augment_in_order &&
                                   options_.eval_transform->crop == options_.data.image_size),
      "eval_transform needs an eval loader whose image_size is its crop");
  if (options_.data.workers < 0 || options_.data.workers > kMaxLoaderWorkers) {
    throw ConfigError("data.workers: expected auto or an integer from 1 to " +
                          std::to_string(kMaxLoaderWorkers) + ", got " +
                          std::to_string(options_.data.workers),
                      "each worker decodes one image at a time; more than the cores gains nothing");
  }
  if (options_.train && options_.data.batch_size < kMinTrainBatch) {
    throw ConfigError(
        "data.batch_size: expected an integer >= 2 (BatchNorm needs at least 2 "
        "images per training batch), got " +
        std::to_string(options_.data.batch_size));
  }
  LTFIT_CHECK(options_.shard.count >= 1 && options_.shard.rank >= 0 &&
                  options_.shard.rank < options_.shard.count,
              "bad loader shard");
  if (options_.train) check_global_batch(options_.data.batch_size, options_.shard.count);
  // Our workers already run one image each in parallel; OpenCV's own pool inside each call
  // would only oversubscribe the cores.
  cv::setNumThreads(1);
  worker_count_ = options_.data.workers > 0 ? options_.data.workers : default_worker_count();
  plan_.resize(samples_.size());
  for (std::size_t i = 0; i < plan_.size(); ++i) plan_[i] = static_cast<std::int64_t>(i);
  if (options_.train) plan_readable();
  readable_ = plan_;
  scheduled_batches_ = epoch_batches();
  start_workers(worker_count_);
}

void Loader::plan_readable() {
  ReadableImages check = check_readable(samples_, limits_, worker_count_);
  for (const UnreadableImage& bad : check.unreadable) {
    note_unreadable(samples_[static_cast<std::size_t>(bad.position)].path, bad.reason);
  }
  if (!check.unreadable.empty()) {
    spdlog::warn("{} of {} training images are unreadable: left out of every epoch ({} planned)",
                 check.unreadable.size(), samples_.size(), check.readable.size());
  }
  plan_ = std::move(check.readable);
}

void Loader::start_workers(int count) {
  state_->threads.reserve(static_cast<std::size_t>(count));
  try {
    for (int i = 0; i < count; ++i) {
      state_->threads.emplace_back([this] {
        name_worker();
        worker_loop();
      });
    }
  } catch (const std::exception& e) {  // std::system_error EAGAIN: no threads or stack memory
    const std::size_t started = state_->threads.size();
    {
      std::lock_guard lock(state_->mutex);
      state_->stopping = true;
    }
    state_->work_ready.notify_all();
    for (auto& t : state_->threads) t.join();
    throw RuntimeError("could not start loader thread " + std::to_string(started + 1) + " of " +
                           std::to_string(count) + ": " + e.what(),
                       "lower data.workers, or raise the process's thread or memory limits");
  }
}

Loader::~Loader() {
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
  }
  state_->work_ready.notify_all();
  for (auto& t : state_->threads) t.join();
}

int Loader::workers() const { return worker_count_; }

std::int64_t Loader::epoch_batches() const {
  const auto n = static_cast<std::int64_t>(plan_.size());
  const std::int64_t b = options_.data.batch_size;
  return options_.train ? n / b : (n + b - 1) / b;
}

std::int64_t Loader::batches_per_epoch() const { return scheduled_batches_; }

std::int64_t Loader::epoch_batch_count() const {
  std::lock_guard lock(state_->mutex);
  return state_->num_batches;
}

std::vector<std::int64_t> Loader::found_unreadable() const {
  std::lock_guard lock(state_->mutex);
  return {state_->failed_positions.begin(), state_->failed_positions.end()};
}

void Loader::leave_out(const std::vector<std::int64_t>& positions) {
  LTFIT_CHECK(std::is_sorted(positions.begin(), positions.end()), "leave_out: unsorted");
  const std::size_t before = plan_.size();
  plan_.clear();
  std::set_difference(readable_.begin(), readable_.end(), positions.begin(), positions.end(),
                      std::back_inserter(plan_));
  if (plan_.size() < before) {
    spdlog::warn(
        "{} training image(s) failed to decode: left out of the epochs from now on ({} planned, "
        "{} batches of the {} scheduled)",
        readable_.size() - plan_.size(), plan_.size(), epoch_batches(), scheduled_batches_);
  }
}

int Loader::image_size_at(int epoch) const {
  int size = options_.data.image_size;
  if (!options_.train) return size;
  for (const SizeStep& step :
       options_.data.size_schedule) {  // ascending epochs (the config's rule)
    if (step.epoch <= epoch) size = step.size;
  }
  return size;
}

void Loader::start_epoch(int epoch, std::int64_t skip_batches) {
  if (!options_.data.size_schedule.empty() && options_.train &&
      (epoch == 0 || image_size_at(epoch) != image_size_at(epoch - 1) || skip_batches > 0)) {
    spdlog::info("training images at {} px from epoch {} (data.size_schedule)",
                 image_size_at(epoch), epoch);
  }
  auto order = std::make_shared<std::vector<std::int64_t>>();
  if (options_.train) {  // a permutation of the planned images (all of them when all passed)
    *order = epoch_permutation(planned(), options_.seed, epoch);
    for (std::int64_t& k : *order) k = plan_[static_cast<std::size_t>(k)];
  } else {
    *order = plan_;
  }
  {
    std::lock_guard lock(state_->mutex);
    state_->epoch = epoch;
    ++state_->generation;
    state_->order = std::move(order);
    state_->num_batches = epoch_batches();
    const std::int64_t first = std::clamp<std::int64_t>(skip_batches, 0, state_->num_batches);
    state_->next_to_build = first;
    state_->next_to_deliver = first;
    state_->done.clear();
    state_->failed_in.clear();
    state_->error = nullptr;
  }
  state_->work_ready.notify_all();
}

std::optional<Batch> Loader::next() {
  std::unique_lock lock(state_->mutex);
  while (state_->next_to_deliver < state_->num_batches) {
    const std::int64_t want = state_->next_to_deliver;
    state_->batch_ready.wait(lock, [&] { return state_->error || state_->done.count(want); });
    if (state_->error) std::rethrow_exception(state_->error);
    std::optional<Batch> batch = std::move(state_->done[want]);
    state_->done.erase(want);
    if (const auto failed = state_->failed_in.find(want); failed != state_->failed_in.end()) {
      state_->failed_positions.insert(failed->second.begin(), failed->second.end());
      state_->failed_in.erase(failed);
    }
    ++state_->next_to_deliver;
    state_->work_ready.notify_all();
    if (batch) return batch;  // a batch left without (enough) readable images is passed over
  }
  return std::nullopt;
}

SkippedImages Loader::skipped() const {
  std::lock_guard lock(state_->mutex);
  return {static_cast<std::int64_t>(state_->bad_paths.size()), state_->bad_examples,
          state_->dropped_batches,
          std::vector<std::string>(state_->bad_paths.begin(), state_->bad_paths.end())};
}

void Loader::worker_loop() {
  const std::int64_t depth = kPrefetchPerWorker * static_cast<std::int64_t>(worker_count_);
  std::unique_lock lock(state_->mutex);
  for (;;) {
    state_->work_ready.wait(lock, [&] {
      return state_->stopping || (!state_->error && state_->next_to_build < state_->num_batches &&
                                  state_->next_to_build < state_->next_to_deliver + depth);
    });
    if (state_->stopping) return;
    const Work work{state_->next_to_build++, state_->epoch, state_->order};
    const std::uint64_t generation = state_->generation;
    lock.unlock();
    std::optional<Batch> batch;
    std::vector<std::int64_t> unreadable;
    std::exception_ptr error;
    try {
      batch = build_batch(work, unreadable);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (generation != state_->generation) continue;  // epoch restarted meanwhile: drop it
    if (error) {
      state_->error = error;
    } else {
      state_->done[work.index] = std::move(batch);
      if (options_.train && !unreadable.empty())
        state_->failed_in[work.index] = std::move(unreadable);
    }
    state_->batch_ready.notify_all();
  }
}

}  // namespace ltfit
