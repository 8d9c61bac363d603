// data.cache: device (device_cache.h): every batch is a CIFAR-style crop (a window of a copy
// padded by 4, maybe mirrored) of its images, in the Loader's epoch order; the draws depend only
// on (seed, epoch, batch), so a resumed epoch and the ranks of a data-parallel run see the same
// global batches; image files are refused. On CUDA the batches equal the CPU's ([cuda]).
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/torch.h>
#include <catch2/catch.hpp>

#include "ltfit/data/device_cache.h"
#include "ltfit/util/error.h"
#include "ltfit/util/random.h"

namespace {

using Catch::Matchers::Contains;

// `n` held 8×8 images whose pixel (y, x, c) is (i * 7 + y * 8 + x + c * 64) % 251 + 1 (never 0,
// the padding's value), labelled i % 3.
std::vector<ltfit::Sample> held_samples(int n, int side = 8) {
  auto block = std::make_shared<std::vector<std::uint8_t>>();
  for (int i = 0; i < n; ++i) {
    for (int y = 0; y < side; ++y) {
      for (int x = 0; x < side; ++x) {
        for (int c = 0; c < 3; ++c) {
          block->push_back(static_cast<std::uint8_t>((i * 7 + y * side + x + c * 64) % 251 + 1));
        }
      }
    }
  }
  std::vector<ltfit::Sample> samples;
  const std::size_t bytes = static_cast<std::size_t>(side) * side * 3;
  for (int i = 0; i < n; ++i) {
    samples.push_back({"b#" + std::to_string(i), i % 3, {}, {block, i * bytes, side, side}});
  }
  return samples;
}

ltfit::LoaderOptions options_of(int batch, int size = 8) {
  ltfit::LoaderOptions options;
  options.train = true;
  options.seed = 5;
  options.data.batch_size = batch;
  options.data.image_size = size;
  return options;
}

// Whether `out` [8,8,3] is a window of `image` [8,8,3] padded by 4 with zeros, maybe mirrored.
bool is_padded_crop(const torch::Tensor& out, const torch::Tensor& image) {
  const torch::Tensor padded = torch::constant_pad_nd(image, {0, 0, 4, 4, 4, 4}, 0);
  for (int dy = 0; dy <= 8; ++dy) {
    for (int dx = 0; dx <= 8; ++dx) {
      const torch::Tensor window = padded.slice(0, dy, dy + 8).slice(1, dx, dx + 8);
      if (torch::equal(out, window) || torch::equal(out, window.flip({1}))) return true;
    }
  }
  return false;
}

}  // namespace

TEST_CASE("data.cache device: padded crops and flips of the epoch's images, in its order",
          "[data][device_cache]") {
  const std::vector<ltfit::Sample> samples = held_samples(20);
  ltfit::DeviceCacheSource source(samples, options_of(6), torch::kCPU);
  CHECK(source.batches_per_epoch() == 3);  // 20 / 6, the last partial batch dropped
  source.start_epoch(2, 0);
  const std::vector<std::int64_t> order = ltfit::epoch_permutation(20, 5, 2);
  int mirrored_or_shifted = 0;
  for (int b = 0; b < 3; ++b) {
    const auto batch = source.next();
    REQUIRE(batch);
    REQUIRE(batch->images.sizes() == torch::IntArrayRef({6, 8, 8, 3}));
    for (int i = 0; i < 6; ++i) {
      const std::int64_t k = order[static_cast<std::size_t>(b * 6 + i)];
      CHECK(batch->indices[static_cast<std::size_t>(i)] == k);
      CHECK(batch->labels[i].item<std::int64_t>() == k % 3);
      const auto& s = samples[static_cast<std::size_t>(k)].image;
      const torch::Tensor image =
          torch::from_blob(const_cast<std::uint8_t*>(s.data()), {8, 8, 3}, torch::kUInt8);
      CHECK(is_padded_crop(batch->images[i], image));
      mirrored_or_shifted += !torch::equal(batch->images[i], image);
    }
  }
  CHECK(mirrored_or_shifted > 9);  // augmented, not copied
  CHECK_FALSE(source.next());
}

TEST_CASE("data.cache device: a resumed epoch and the ranks' slices are the same batches",
          "[data][device_cache]") {
  const std::vector<ltfit::Sample> samples = held_samples(24);
  ltfit::DeviceCacheSource whole(samples, options_of(8), torch::kCPU);
  whole.start_epoch(1, 0);
  std::vector<torch::Tensor> batches;
  while (auto b = whole.next()) batches.push_back(b->images);
  REQUIRE(batches.size() == 3);

  ltfit::DeviceCacheSource resumed(samples, options_of(8), torch::kCPU);
  resumed.start_epoch(1, 2);
  const auto last = resumed.next();
  REQUIRE(last);
  CHECK(torch::equal(last->images, batches[2]));

  std::vector<torch::Tensor> parts;
  for (int rank = 0; rank < 2; ++rank) {
    ltfit::LoaderOptions options = options_of(8);
    options.shard = {rank, 2};
    ltfit::DeviceCacheSource part(samples, options, torch::kCPU);
    part.start_epoch(1, 0);
    const auto first = part.next();
    REQUIRE(first);
    CHECK(first->images.size(0) == 4);
    parts.push_back(first->images);
  }
  CHECK(torch::equal(torch::cat(parts), batches[0]));
}

TEST_CASE("data.cache device: resized to image_size, and image files and mixed sizes refused",
          "[data][device_cache]") {
  ltfit::DeviceCacheSource big(held_samples(4), options_of(2, 16), torch::kCPU);
  big.start_epoch(0, 0);
  CHECK(big.next()->images.sizes() == torch::IntArrayRef({2, 16, 16, 3}));

  std::vector<ltfit::Sample> files = {{"a.jpg", 0}, {"b.jpg", 1}};
  CHECK_THROWS_WITH(ltfit::DeviceCacheSource(files, options_of(2), torch::kCPU),
                    Contains("data.cache: device") && Contains("'a.jpg' is an image file"));
  std::vector<ltfit::Sample> mixed = held_samples(2);
  mixed.push_back(held_samples(1, 6)[0]);
  CHECK_THROWS_AS(ltfit::DeviceCacheSource(mixed, options_of(2), torch::kCPU), ltfit::ConfigError);
}

TEST_CASE("data.cache device: CUDA batches equal the CPU's", "[cuda][device_cache]") {
  if (!torch::cuda::is_available()) {
    WARN("SKIPPED: no CUDA device");
    return;
  }
  const std::vector<ltfit::Sample> samples = held_samples(32);
  ltfit::DeviceCacheSource cpu(samples, options_of(16), torch::kCPU);
  ltfit::DeviceCacheSource gpu(samples, options_of(16), torch::kCUDA);
  cpu.start_epoch(3, 0);
  gpu.start_epoch(3, 0);
  const auto a = cpu.next();
  const auto b = gpu.next();
  REQUIRE(a);
  REQUIRE(b);
  CHECK(b->images.is_cuda());
  CHECK(torch::equal(a->images, b->images.cpu()));
  CHECK(torch::equal(a->labels, b->labels.cpu()));
}
