// Dynamic batching for `ltfit serve`: images submitted by many request threads are run through
// the model together, up to `max_batch` at a time, each batch started at the latest `max_wait`
// after its first image arrived, as soon as it is full, or as soon as no other image is on its way
// (expect(): a request announces its images before decoding them, so a lone request runs at once
// and a busy server still fills its batches). The queue is bounded: submit() says
// no when `queue` images wait, and the server answers 503 with Retry-After. Each image carries a
// deadline: one still queued when its deadline passes is answered "expired" without being run
// (its request has already answered 503). Images asking for test-time augmentation ride in the
// same batches; the run function gets a flag per row. One worker thread owns the model; the
// destructor finishes what is queued, then joins it. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <torch/types.h>

namespace ltfit {

class Batcher {
 public:
  // The model on a batch: uint8 [N,S,S,3] and a flag per row (1: test-time augmented) ->
  // float [N,classes] probabilities (and logits).
  using Run = std::function<std::pair<torch::Tensor, torch::Tensor>(const torch::Tensor& images,
                                                                    const std::vector<char>& tta)>;
  struct Result {
    torch::Tensor probabilities;       // [classes], CPU
    torch::Tensor logits;              // [classes], CPU
    std::optional<std::string> error;  // the batch failed (out of memory, ...), or "expired"
  };
  struct Stats {
    std::int64_t images = 0;  // run through the model
    std::int64_t batches = 0;
    std::vector<std::int64_t> batch_sizes;  // count of batches of each size, index = size
    std::int64_t queued = 0;                // waiting now
    std::int64_t refused = 0;               // submits refused because the queue was full
    std::int64_t expired = 0;               // images dropped unrun past their deadline
    double run_seconds = 0;                 // time in the run function, all batches together
  };

  Batcher(Run run, int max_batch, std::chrono::milliseconds max_wait, std::size_t queue);
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Images on their way to submit() (being decoded) while it lives: a batch short of max_batch
  // waits for them, up to max_wait. Move-only; the count drops when it is destroyed.
  class Coming {
   public:
    Coming(Batcher* batcher, std::int64_t images);
    Coming(Coming&& other) noexcept;
    Coming(const Coming&) = delete;
    Coming& operator=(const Coming&) = delete;
    Coming& operator=(Coming&&) = delete;
    ~Coming();

   private:
    Batcher* batcher_;
    std::int64_t images_;
  };
  // Announces `images` images about to be submitted (by the caller, while the result lives).
  Coming expect(std::int64_t images);

  // Queues one image (uint8 [S,S,3]), test-time augmented when `tta`, to be run before
  // `deadline`; null when the queue is full.
  std::optional<std::future<Result>> submit(torch::Tensor image, bool tta,
                                            std::chrono::steady_clock::time_point deadline);
  Stats stats() const;

 private:
  struct Item {
    torch::Tensor image;
    std::promise<Result> promise;
    std::chrono::steady_clock::time_point arrived;
    bool tta = false;
    std::chrono::steady_clock::time_point deadline;
  };
  std::vector<Item> next_batch();  // waits for one; empty when closing with nothing left
  void work();

  Run run_;
  int max_batch_;
  std::chrono::milliseconds max_wait_;
  std::size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Item> queue_;
  std::int64_t coming_ = 0;  // images announced by expect() and not yet submitted
  bool closing_ = false;
  Stats stats_;
  std::thread worker_;
};

}  // namespace ltfit
