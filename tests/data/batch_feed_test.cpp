#include <torch/torch.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "ltfit/data/batch_feed.h"

namespace {

ltfit::Batch random_batch(std::int64_t n, std::int64_t size, std::uint64_t seed, bool pinned) {
  torch::manual_seed(seed);
  ltfit::Batch batch;
  batch.images = torch::randint(0, 256, {n, size, size, 3}, torch::kUInt8);
  batch.labels = torch::randint(0, 5, {n}, torch::kInt64);
  if (pinned) batch.images = batch.images.pin_memory();
  return batch;
}

}  // namespace

TEST_CASE("BatchFeed on the CPU normalises at once, as normalize_images does", "[data][loader]") {
  const ltfit::ImageNormalization norm{{0.5F, 0.25F, 0.75F}, {0.2F, 0.3F, 0.4F}};
  for (const bool channels_last : {false, true}) {
    const ltfit::BatchFeed feed(torch::kCPU, channels_last, norm);
    CHECK_FALSE(feed.overlaps());
    const ltfit::Batch batch = random_batch(4, 12, 1, false);
    const ltfit::StagedBatch staged = feed.stage(batch);
    feed.use(staged);
    CHECK(staged.ready == nullptr);
    CHECK(torch::equal(staged.images,
                       ltfit::normalize_images(batch.images, torch::kCPU, channels_last, norm)));
    CHECK(staged.images.is_contiguous(channels_last ? torch::MemoryFormat::ChannelsLast
                                                    : torch::MemoryFormat::Contiguous));
    CHECK(torch::equal(staged.labels, batch.labels));
  }
}

TEST_CASE("normalize_on_device equals normalize_images' CPU table", "[data][loader]") {
  const ltfit::ImageNormalization norm{{0.485F, 0.456F, 0.406F}, {0.229F, 0.224F, 0.225F}};
  const ltfit::Batch batch = random_batch(3, 9, 2, false);
  const torch::Tensor table = ltfit::normalize_images(batch.images, torch::kCPU, true, norm);
  const torch::Tensor formula = ltfit::normalize_on_device(
      batch.images, ltfit::normalization_tensors(norm, torch::kCPU), true);
  CHECK(torch::allclose(table, formula, /*rtol=*/0, /*atol=*/1e-6));
}

// Batch k+1 is staged on the side stream while the current stream is still busy with batch k,
// and the host never writes a pinned buffer that a copy may still read: each staged batch must
// equal the direct copy, whatever the timing.
TEST_CASE("BatchFeed on CUDA: copies on a side stream, two in flight, equal the direct copy",
          "[cuda][data]") {
  if (!torch::cuda::is_available()) {
    WARN("SKIPPED: no CUDA device");
    return;
  }
  const torch::Device cuda(torch::kCUDA, 0);
  const ltfit::ImageNormalization norm{};
  const ltfit::BatchFeed feed(cuda, /*channels_last=*/true, norm);
  REQUIRE(feed.overlaps());
  const torch::Tensor busy = torch::randn({2048, 2048}, cuda);
  std::vector<ltfit::Batch> hosts;
  for (int k = 0; k < 12; ++k) hosts.push_back(random_batch(16, 96, 10 + k, /*pinned=*/true));
  ltfit::StagedBatch next = feed.stage(hosts[0]);
  for (std::size_t k = 0; k < hosts.size(); ++k) {
    const ltfit::StagedBatch current = next;
    if (k + 1 < hosts.size()) next = feed.stage(hosts[k + 1]);
    CHECK(current.ready != nullptr);
    feed.use(current);
    // Work on the current stream that reads the batch, queued behind a long matmul.
    const torch::Tensor sum = busy.mm(busy).sum() * 0 + current.images.sum();
    const torch::Tensor expected = ltfit::normalize_images(hosts[k].images, cuda, true, norm);
    CHECK(torch::allclose(current.images, expected));
    CHECK(torch::allclose(sum, expected.sum(), /*rtol=*/1e-4));
    CHECK(torch::equal(current.labels.cpu(), hosts[k].labels));
    CHECK(current.images.device() == cuda);
  }
  // An unpinned batch is pinned on the way and arrives the same.
  const ltfit::Batch plain = random_batch(4, 32, 99, /*pinned=*/false);
  const ltfit::StagedBatch staged = feed.stage(plain);
  feed.use(staged);
  CHECK(torch::allclose(staged.images, ltfit::normalize_images(plain.images, cuda, true, norm)));
}
