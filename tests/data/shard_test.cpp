// Splitting the data between the ranks of a data-parallel run: the arithmetic (world sizes 1, 2,
// 3: union, disjointness, empty shards) and the training loader's slices (the union of the
// ranks' slices is the 1-rank batch, at any resume position; unreadable images refill without
// two ranks taking the same image; a slice left without images is delivered empty).
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

#include "data/hostile_images.h"
#include "ltfit/data/loader.h"
#include "ltfit/data/shard.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace {

std::vector<std::int64_t> all_indices(ltfit::Loader& loader, int epoch, std::int64_t skip,
                                      std::vector<std::int64_t>* sizes = nullptr) {
  std::vector<std::int64_t> out;
  loader.start_epoch(epoch, skip);
  while (auto batch = loader.next()) {
    if (sizes != nullptr) sizes->push_back(static_cast<std::int64_t>(batch->indices.size()));
    out.insert(out.end(), batch->indices.begin(), batch->indices.end());
  }
  return out;
}

ltfit::LoaderOptions sharded(int batch, ltfit::Shard shard) {
  ltfit::LoaderOptions o;
  o.data.image_size = 24;
  o.data.batch_size = batch;
  o.train = true;
  o.seed = 5;
  o.data.workers = 2;
  o.shard = shard;
  return o;
}

}  // namespace

TEST_CASE("batch slices of world sizes 1, 2 and 3 tile the global batch", "[shard]") {
  for (const int ranks : {1, 2, 3}) {
    const std::int64_t global = 6 * ranks;
    std::vector<int> covered(static_cast<std::size_t>(global), 0);
    for (int r = 0; r < ranks; ++r) {
      const ltfit::Span s = ltfit::batch_slice(global, {r, ranks});
      CHECK(s.size() == 6);
      for (std::int64_t i = s.begin; i < s.end; ++i) ++covered[static_cast<std::size_t>(i)];
    }
    CHECK(std::all_of(covered.begin(), covered.end(), [](int c) { return c == 1; }));
  }
}

TEST_CASE("validation ranges are disjoint, unpadded and may be empty", "[shard]") {
  for (const int ranks : {1, 2, 3}) {
    for (const std::int64_t n : {0, 1, 2, 5, 7, 40}) {
      std::int64_t next = 0;
      for (int r = 0; r < ranks; ++r) {
        const ltfit::Span s = ltfit::sample_range(n, {r, ranks});
        CHECK(s.begin == next);  // contiguous, in rank order: disjoint, nothing left out
        CHECK(s.size() >= n / ranks);
        CHECK(s.size() <= n / ranks + 1);  // sizes differ by at most one
        next = s.end;
      }
      CHECK(next == n);  // the union is the whole set, no sample twice (no padding)
    }
  }
  CHECK(ltfit::sample_range(1, {0, 3}).size() == 0);  // a rank may have nothing to evaluate
  CHECK(ltfit::sample_range(1, {2, 3}).size() == 1);
}

TEST_CASE("a global batch that does not split over the ranks is a config error", "[shard]") {
  CHECK_NOTHROW(ltfit::check_global_batch(16, 1));
  CHECK_NOTHROW(ltfit::check_global_batch(16, 2));
  CHECK_THROWS_AS(ltfit::check_global_batch(16, 3), ltfit::ConfigError);
  CHECK_THROWS_AS(ltfit::check_global_batch(6, 6), ltfit::ConfigError);  // 1 image per rank
  CHECK_THROWS_WITH(ltfit::check_global_batch(10, 4),
                    Catch::Contains("data.batch_size 10") && Catch::Contains("divide by 4"));
}

TEST_CASE("the ranks' slices of each batch are the 1-rank batch, from any resume position",
          "[shard][loader]") {
  ltfit::testing::TempDir dir;
  const auto samples = ltfit::testing::write_small_synth(dir.path(), 36, 2, 32, 40, 3);
  REQUIRE(samples.size() == 36);
  ltfit::Loader whole(samples, sharded(12, {0, 1}));
  for (const int ranks : {2, 3}) {
    std::vector<std::unique_ptr<ltfit::Loader>> loaders;
    for (int r = 0; r < ranks; ++r) {
      loaders.push_back(std::make_unique<ltfit::Loader>(samples, sharded(12, {r, ranks})));
      CHECK(loaders.back()->batches_per_epoch() == whole.batches_per_epoch());
    }
    for (const std::int64_t skip : {0, 1, 2}) {  // a resumed epoch starts at batch `skip`
      const std::vector<std::int64_t> expected = all_indices(whole, 1, skip);
      std::vector<std::vector<std::int64_t>> parts;
      for (auto& l : loaders) parts.push_back(all_indices(*l, 1, skip));
      // Batch by batch: rank 0's slice, then rank 1's, ... is the 1-rank batch.
      const std::int64_t local = 12 / ranks;
      std::vector<std::int64_t> joined;
      for (std::int64_t b = 0; b < whole.batches_per_epoch() - skip; ++b) {
        for (const auto& p : parts) {
          REQUIRE(static_cast<std::int64_t>(p.size()) >= (b + 1) * local);
          joined.insert(joined.end(), p.begin() + b * local, p.begin() + (b + 1) * local);
        }
      }
      CHECK(joined == expected);
    }
  }
}

TEST_CASE("unreadable images refill each rank's slice with different images", "[shard][loader]") {
  ltfit::testing::TempDir dir;
  auto samples = ltfit::testing::write_small_synth(dir.path(), 24, 2, 32, 40, 4);
  // A quarter of the images fail to decode: most slices need refills, which rank r takes from
  // every 2nd image after the global batch, starting at the r-th. (Their headers are sound, so
  // they stay in the plan; files the header check refuses leave it: readable_images_test.cpp.)
  for (std::size_t i = 0; i < samples.size(); i += 4) {
    ltfit::testing::write_file(samples[i].path, ltfit::testing::png_claiming(36, 36));
  }
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<std::vector<std::int64_t>> batches_of_rank;
    for (int r = 0; r < 2; ++r) {
      ltfit::Loader loader(samples, sharded(8, {r, 2}));
      std::vector<std::int64_t> sizes;
      batches_of_rank.push_back(all_indices(loader, epoch, 0, &sizes));
      CHECK(sizes == std::vector<std::int64_t>(3, 4));  // full slices despite the bad images
    }
    for (std::size_t b = 0; b < 3; ++b) {  // within one global batch, no image twice
      std::set<std::int64_t> seen;
      for (const auto& rank : batches_of_rank) {
        for (std::size_t i = 4 * b; i < 4 * b + 4; ++i) CHECK(seen.insert(rank[i]).second);
      }
    }
  }
}

TEST_CASE("a slice without readable images is delivered empty, never passed over",
          "[shard][loader]") {
  ltfit::testing::TempDir dir;
  auto samples = ltfit::testing::write_small_synth(dir.path(), 8, 2, 32, 40, 6);
  for (std::size_t i = 1; i < samples.size(); ++i) {  // one decodable image in the whole set
    ltfit::testing::write_file(samples[i].path, ltfit::testing::png_claiming(36, 36));
  }
  for (int r = 0; r < 2; ++r) {
    ltfit::Loader loader(samples, sharded(4, {r, 2}));
    loader.start_epoch(0);
    int batches = 0;
    while (auto batch = loader.next()) {
      ++batches;
      CHECK(batch->labels.size(0) == 0);  // fewer than 2 images: BatchNorm cannot train
      CHECK(batch->images.size(0) == 0);
    }
    CHECK(batches == 2);  // every rank counts both batches: the ranks stay in step
  }
}
