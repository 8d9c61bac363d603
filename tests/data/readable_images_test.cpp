// Unreadable files leave the training plan: readable images are seen once an epoch, whatever
// the share of unreadable ones, identically on every run, rank and resume.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "data/hostile_images.h"
#include "ltfit/data/loader.h"
#include "ltfit/data/readable_images.h"
#include "support/test_support.h"

namespace fs = std::filesystem;

namespace {

ltfit::LoaderOptions tiny_train(int workers, int batch_size) {
  ltfit::LoaderOptions o;
  o.data.image_size = 16;
  o.data.batch_size = batch_size;
  o.train = true;
  o.seed = 21;
  o.data.workers = workers;
  return o;
}

std::vector<ltfit::Batch> epoch_batches(ltfit::Loader& loader, int epoch, std::int64_t skip = 0) {
  std::vector<ltfit::Batch> batches;
  loader.start_epoch(epoch, skip);
  while (auto b = loader.next()) batches.push_back(*b);
  return batches;
}

// `readable` small images followed by `empty` empty .jpg files.
std::vector<ltfit::Sample> mostly_empty(const ltfit::testing::TempDir& dir, int readable,
                                        int empty) {
  auto samples = ltfit::testing::write_small_synth(dir.path(), readable, 2, 32, 40, /*seed=*/4);
  for (int i = 0; i < empty; ++i) {
    const fs::path path = dir.path() / "empty" / ("e" + std::to_string(i) + ".jpg");
    ltfit::testing::write_file(path, "");
    samples.push_back({path.string(), i % 2});
  }
  return samples;
}

}  // namespace

TEST_CASE("64 readable images among 640 empty files: 4 batches, each image once an epoch",
          "[data][loader][readable]") {
  ltfit::testing::TempDir dir;
  const auto samples = mostly_empty(dir, 64, 640);
  ltfit::Loader loader(samples, tiny_train(2, 16));
  CHECK(loader.size() == 704);
  CHECK(loader.planned() == 64);
  CHECK(loader.batches_per_epoch() == 4);  // before: 44, each image ~11 times an epoch
  CHECK(loader.skipped().count == 640);
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::multiset<std::int64_t> seen;
    const auto batches = epoch_batches(loader, epoch);
    REQUIRE(batches.size() == 4);
    for (const auto& b : batches) {
      CHECK(b.labels.size(0) == 16);
      seen.insert(b.indices.begin(), b.indices.end());
    }
    CHECK(seen.size() == 64);
    CHECK(std::set<std::int64_t>(seen.begin(), seen.end()).size() == 64);  // no repeats
    CHECK(*seen.rbegin() < 64);                                            // no empty file
  }
  CHECK(loader.skipped().count == 640);  // counted once, not again per epoch
}

TEST_CASE("the plan over readable images is the same for any worker count, shard and resume",
          "[data][loader][readable]") {
  ltfit::testing::TempDir dir;
  const auto samples = mostly_empty(dir, 24, 40);
  ltfit::Loader one(samples, tiny_train(1, 4));
  ltfit::Loader three(samples, tiny_train(3, 4));
  const auto a = epoch_batches(one, 3);
  const auto b = epoch_batches(three, 3);
  REQUIRE(a.size() == 6);
  REQUIRE(b.size() == a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].indices == b[i].indices);
    CHECK(torch::equal(a[i].images, b[i].images));
  }
  CHECK(epoch_batches(one, 4)[0].indices != a[0].indices);   // a new shuffle each epoch
  const auto resumed = epoch_batches(three, 3, /*skip=*/4);  // mid-epoch resume
  REQUIRE(resumed.size() == 2);
  CHECK(resumed[0].indices == a[4].indices);
  CHECK(torch::equal(resumed[1].images, a[5].images));
  // Two ranks: each checks every file itself and their slices make up the whole batch.
  std::vector<std::vector<ltfit::Batch>> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ltfit::LoaderOptions options = tiny_train(2, 4);
    options.shard = {rank, 2};
    ltfit::Loader part(samples, options);
    CHECK(part.batches_per_epoch() == one.batches_per_epoch());
    ranks.push_back(epoch_batches(part, 3));
  }
  REQUIRE(ranks[0].size() == a.size());
  REQUIRE(ranks[1].size() == a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    std::vector<std::int64_t> joined = ranks[0][i].indices;
    joined.insert(joined.end(), ranks[1][i].indices.begin(), ranks[1][i].indices.end());
    CHECK(joined == a[i].indices);
  }
}

TEST_CASE("check_readable names what the header check refuses and keeps the rest",
          "[data][readable]") {
  ltfit::testing::TempDir dir;
  auto samples = ltfit::testing::write_small_synth(dir.path(), 4, 2, 32, 40, /*seed=*/2);
  const std::string good = ltfit::testing::read_file(samples[0].path);
  const fs::path bad = dir.path() / "bad";
  ltfit::testing::write_file(bad / "empty.jpg", "");
  ltfit::testing::write_file(bad / "text.jpg", "not an image at all");
  ltfit::testing::write_file(bad / "truncated.jpg",
                             good.substr(0, good.size() - 8));  // the end cut off
  ltfit::testing::write_file(bad / "huge.png", ltfit::testing::png_claiming(20000, 20000));
  ltfit::testing::write_file(bad / "body.png", ltfit::testing::png_claiming(30, 30));
  for (const char* name : {"empty.jpg", "text.jpg", "truncated.jpg", "huge.png", "body.png"}) {
    samples.push_back({(bad / name).string(), 0});
  }
  const ltfit::ReadableImages check = ltfit::check_readable(samples, {}, 3);
  // body.png's header is sound: only decoding finds its pixels missing, so it stays planned.
  CHECK(check.readable == std::vector<std::int64_t>{0, 1, 2, 3, 8});
  REQUIRE(check.unreadable.size() == 4);
  CHECK(check.unreadable[0].reason == "empty file (0 bytes)");
  CHECK_THAT(check.unreadable[1].reason, Catch::Matchers::Contains("not a decodable image"));
  CHECK(check.unreadable[2].reason == "truncated JPEG (no end-of-image marker)");
  CHECK_THAT(check.unreadable[3].reason, Catch::Matchers::Contains("data.max_pixels"));
  CHECK(ltfit::check_readable(samples, {}, 1).readable == check.readable);
  CHECK(ltfit::first_readable(samples, {}) == 0);
  const std::vector<ltfit::Sample> none(samples.begin() + 4, samples.begin() + 8);
  CHECK(ltfit::first_readable(none, {}) == -1);
}

// Before, a validation split without a readable image trained a whole epoch and then failed
// ("no readable image to evaluate") with no checkpoint; 640 empty training files among 64 images
// made 44 steps an epoch and train_images 704.
TEST_CASE("train refuses an unreadable validation split up front and plans over readable images",
          "[data][readable][cli]") {
  ltfit::testing::TempDir dir;
  const fs::path data = dir.path() / "data";
  REQUIRE(ltfit::testing::run_ltfit("synth --out " + data.string() + " --train 16 --valid 4")
              .exit_code == 0);
  for (int i = 0; i < 48; ++i) {  // three empty files per readable training image
    ltfit::testing::write_file(
        data / "train" / (i % 2 ? "dog" : "cat") / ("empty" + std::to_string(i) + ".jpg"), "");
  }
  const fs::path config = dir.path() / "c.yaml";
  ltfit::testing::write_file(config,
                             "run: {name: r, out_dir: " + (dir.path() / "runs").string() +
                                 "}\n"
                                 "data: {root: " +
                                 data.string() +
                                 ", image_size: 32, batch_size: 4, workers: 2}\n"
                                 "model: {arch: resnet18, pretrained: none, head: linear}\n"
                                 "train: {recipe: one_cycle, epochs: 1, lr: 2.0e-3, device: cpu}\n"
                                 "eval: {tta: false}\n");
  const auto trained = ltfit::testing::run_ltfit("train --json --config " + config.string());
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);
  const auto summary = nlohmann::json::parse(trained.stdout_text);
  CHECK(summary["train_images"] == 16);
  CHECK(summary["train_skipped_images"] == 48);
  CHECK(summary["skipped_images"] == 48);
  const std::string steps = ltfit::testing::read_file(dir.path() / "runs/r/steps.csv");
  CHECK(std::count(steps.begin(), steps.end(), '\n') == 1 + 4);  // 16 / 4, not 64 / 4

  for (const auto& entry : fs::recursive_directory_iterator(data / "valid")) {
    if (entry.is_regular_file()) ltfit::testing::write_file(entry.path(), "");
  }
  const auto refused = ltfit::testing::run_ltfit("train --config " + config.string());
  INFO(refused.output);
  CHECK(refused.exit_code == 3);
  CHECK_THAT(refused.output, Catch::Matchers::Contains("the validation split of data.root") &&
                                 Catch::Matchers::Contains("has no readable image"));
  CHECK_FALSE(fs::exists(dir.path() / "runs/r-2/checkpoints/last.ckpt"));  // nothing trained
}
