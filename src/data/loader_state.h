// What loader.cpp (the worker threads, epochs and delivery) and loader_batch.cpp (building one
// batch) share: the Loader's state behind its mutex, one batch's work item, and the smallest
// training batch. Private to src/data.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ltfit/data/loader.h"

namespace ltfit {

constexpr std::int64_t kMinTrainBatch = 2;  // BatchNorm needs two samples to train

// One batch to build: which, of which epoch, from which order.
struct Loader::Work {
  std::int64_t index = 0;
  int epoch = 0;
  std::shared_ptr<const std::vector<std::int64_t>> order;  // sample positions in epoch order
};

struct Loader::State {
  std::mutex mutex;
  std::condition_variable work_ready;   // workers wait for work / room
  std::condition_variable batch_ready;  // consumer waits for its batch
  std::vector<std::thread> threads;
  bool stopping = false;
  // Current epoch.
  int epoch = 0;
  std::uint64_t generation = 0;  // bumped by start_epoch to discard stale work
  std::shared_ptr<const std::vector<std::int64_t>> order =
      std::make_shared<std::vector<std::int64_t>>();
  std::int64_t num_batches = 0;
  std::int64_t next_to_build = 0;                     // next batch a worker claims
  std::int64_t next_to_deliver = 0;                   // next batch the consumer returns
  std::map<std::int64_t, std::optional<Batch>> done;  // built batches (nullopt: dropped)
  std::exception_ptr error;
  // Skipped images and dropped batches.
  std::set<std::string> bad_paths;
  std::vector<std::string> bad_examples;
  std::int64_t dropped_batches = 0;
  // Training: positions whose decoding failed (header check passed), from delivered batches
  // only, so what is reported depends on how far the epoch got, never on the workers' timing.
  std::set<std::int64_t> failed_positions;
  // Per built batch: the unreadable positions among the candidates it went through.
  std::map<std::int64_t, std::vector<std::int64_t>> failed_in;
};

}  // namespace ltfit
