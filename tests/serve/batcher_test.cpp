// serve's dynamic batcher (serve/batcher.h): images from many threads run together up to the
// batch size, each gets its own row back, a full queue says no, an image past its deadline is
// dropped unrun, a lone image runs without waiting while announced ones are waited for, the TTA
// flags reach the run function row by row, and a failing batch answers every image with the error.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "ltfit/serve/batcher.h"

using ltfit::Batcher;
using Clock = std::chrono::steady_clock;

namespace {

// An image whose pixels are all `value` (uint8 [2,2,3]).
torch::Tensor image_of(int value) { return torch::full({2, 2, 3}, value, torch::kUInt8); }

// Probabilities [N,2]: each row's first pixel and its TTA flag; logits: the row index.
std::pair<torch::Tensor, torch::Tensor> echo(const torch::Tensor& images,
                                             const std::vector<char>& tta) {
  const auto n = images.size(0);
  torch::Tensor out = torch::zeros({n, 2});
  for (std::int64_t i = 0; i < n; ++i) {
    out[i][0] = images[i][0][0][0].item<int>();
    out[i][1] = tta[static_cast<std::size_t>(i)];
  }
  return {out, torch::arange(n).unsqueeze(1).to(torch::kFloat)};
}

const auto kLater = Clock::now() + std::chrono::hours(1);

// The sizes of the batches a batcher ran, recorded by the run function echoing() makes.
struct BatchSizes {
  std::mutex mutex;
  std::vector<std::int64_t> sizes;
  Batcher::Run echoing() {
    return [this](const torch::Tensor& images, const std::vector<char>& tta) {
      std::lock_guard<std::mutex> lock(mutex);
      sizes.push_back(images.size(0));
      return echo(images, tta);
    };
  }
};

}  // namespace

TEST_CASE("the batcher runs concurrent images together and answers each its own row",
          "[serve][batcher]") {
  BatchSizes seen;
  Batcher batcher(seen.echoing(), 4, std::chrono::milliseconds(300), 64);
  const Batcher::Coming coming = batcher.expect(8);  // so that batches wait to fill
  std::vector<std::future<Batcher::Result>> results;
  for (int i = 0; i < 8; ++i) results.push_back(*batcher.submit(image_of(i), i % 3 == 0, kLater));
  for (int i = 0; i < 8; ++i) {
    const Batcher::Result r = results[static_cast<std::size_t>(i)].get();
    REQUIRE_FALSE(r.error);
    CHECK(r.probabilities[0].item<int>() == i);
    CHECK(r.probabilities[1].item<int>() == (i % 3 == 0 ? 1 : 0));
  }
  CHECK(seen.sizes == std::vector<std::int64_t>{4, 4});
  const Batcher::Stats stats = batcher.stats();
  CHECK(stats.images == 8);
  CHECK(stats.batches == 2);
  CHECK(stats.batch_sizes[4] == 2);
}

TEST_CASE("the batcher refuses beyond its queue, drops expired images, and reports failures",
          "[serve][batcher]") {
  std::mutex gate_mutex;
  std::condition_variable gate_open;
  bool open = false;
  std::atomic<int> runs{0}, rows{0};
  Batcher batcher(
      [&](const torch::Tensor& images, const std::vector<char>& tta) {
        std::unique_lock<std::mutex> lock(gate_mutex);
        gate_open.wait(lock, [&] { return open; });
        ++runs;
        rows += static_cast<int>(images.size(0));
        if (images[0][0][0][0].item<int>() == 99) throw std::runtime_error("out of memory");
        return echo(images, tta);
      },
      1, std::chrono::milliseconds(0), 2);
  auto first = batcher.submit(image_of(1), false, kLater);  // taken by the worker, held at the gate
  REQUIRE(first);
  while (batcher.stats().queued != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto expired = batcher.submit(image_of(2), false, Clock::now() + std::chrono::milliseconds(1));
  auto failing = batcher.submit(image_of(99), false, kLater);
  REQUIRE((expired && failing));
  CHECK_FALSE(batcher.submit(image_of(3), false, kLater));  // the queue holds 2
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  {
    std::lock_guard<std::mutex> lock(gate_mutex);
    open = true;
  }
  gate_open.notify_all();
  CHECK_FALSE(first->get().error);
  CHECK(expired->get().error == std::optional<std::string>("expired"));
  CHECK(failing->get().error == std::optional<std::string>("out of memory"));
  CHECK(runs == 2);  // the expired image never reached the model
  CHECK(rows == 2);
  const Batcher::Stats stats = batcher.stats();
  CHECK(stats.refused == 1);
  CHECK(stats.expired == 1);
}

TEST_CASE("the batcher runs a lone image at once and waits only for images announced to it",
          "[serve][batcher]") {
  BatchSizes seen;
  Batcher batcher(seen.echoing(), 4, std::chrono::seconds(30), 64);
  // Nothing else on its way: no waiting for a batch that would never fill.
  auto lone = batcher.submit(image_of(1), false, kLater);
  REQUIRE(lone);
  REQUIRE(lone->wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  std::optional<std::future<Batcher::Result>> first, second;
  {
    const Batcher::Coming coming = batcher.expect(2);
    first = batcher.submit(image_of(2), false, kLater);
    REQUIRE(first);
    // The second announced image is still being decoded: the first waits for it.
    CHECK(first->wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout);
    second = batcher.submit(image_of(3), false, kLater);
    REQUIRE(second);
  }
  REQUIRE(first->wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  CHECK(first->get().probabilities[0].item<int>() == 2);
  CHECK(second->get().probabilities[0].item<int>() == 3);
  std::lock_guard<std::mutex> lock(seen.mutex);
  CHECK(seen.sizes == std::vector<std::int64_t>{1, 2});
}
