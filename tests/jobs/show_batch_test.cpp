// show-batch shows the batch as the model sees it (issue 40 B3): after the loader, the trainer's
// own batch hooks (device augmentation, random erasing, MixUp/CutMix) at the optimizer step the
// trainer is at. Before, random erasing and MixUp/CutMix were left out, and device augmentation
// drew from the epoch number instead of the step.
#include <filesystem>

#include <torch/torch.h>
#include <catch2/catch.hpp>

#include "ltfit/jobs/loader_jobs.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/train/random_erasing.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using ltfit::testing::run_ltfit;
using ltfit::testing::TempDir;

namespace {

// A batch of `n` 32-px images of two classes, alternating, in distinct flat colours.
ltfit::Batch flat_batch(std::int64_t n) {
  ltfit::Batch batch;
  batch.images = torch::empty({n, 32, 32, 3}, torch::kUInt8);
  std::vector<std::int64_t> labels;
  for (std::int64_t i = 0; i < n; ++i) {
    batch.images[i].fill_(static_cast<int>(40 + 20 * i));
    labels.push_back(i % 2);
  }
  batch.labels = torch::tensor(labels, torch::kLong);
  return batch;
}

ltfit::Config shown_config() {
  ltfit::Config config;
  config.model.arch = "resnet18";
  config.run.seed = 9;
  return config;
}

}  // namespace

TEST_CASE("show-batch's batch: nothing on, the loader's batch as it is", "[jobs][show_batch]") {
  const ltfit::Batch batch = flat_batch(4);
  const ltfit::ShownBatch shown = ltfit::batch_as_trained(shown_config(), batch, 2, 0);
  CHECK(shown.what.empty());
  CHECK_FALSE(shown.targets.defined());
  CHECK(torch::equal(shown.images, batch.images));
}

TEST_CASE("show-batch's batch: random erasing boxes as the trainer's hook draws them",
          "[jobs][show_batch]") {
  ltfit::Config config = shown_config();
  config.data.augment.random_erasing.p = 1.0;
  config.data.augment.random_erasing.random_value = false;
  config.data.augment.random_erasing.value = 0.0;  // normalized 0: the mean colour
  const ltfit::Batch batch = flat_batch(4);
  const ltfit::ShownBatch shown = ltfit::batch_as_trained(config, batch, 2, 7);
  CHECK(shown.what == "random erasing");
  const auto mean = ltfit::arch_info("resnet18").normalization.mean;
  for (std::int64_t n = 0; n < 4; ++n) {
    // The same box the hook erases at step 7 (slice 0, image n), in the mean colour.
    const torch::Tensor probe = torch::zeros({3, 32, 32});
    at::Generator g =
        at::make_generator<at::CPUGeneratorImpl>(ltfit::RandomErasingHook::image_seed(9, 7, 0, n));
    const ltfit::ErasedBox box = ltfit::random_erase(probe, config.data.augment.random_erasing, g);
    REQUIRE(box.erased);
    const torch::Tensor image = shown.images[n];
    for (int c = 0; c < 3; ++c) {
      const int expected = static_cast<int>(std::lround(mean[static_cast<std::size_t>(c)] * 255));
      CHECK(std::abs(image[box.i + box.h / 2][box.j + box.w / 2][c].item<int>() - expected) <= 1);
    }
    CHECK(image.ne(batch.images[n]).any().item<bool>());
  }
  // Another step (another epoch's first batch) draws other boxes; the same step the same.
  CHECK_FALSE(torch::equal(ltfit::batch_as_trained(config, batch, 2, 8).images, shown.images));
  CHECK(torch::equal(ltfit::batch_as_trained(config, batch, 2, 7).images, shown.images));
}

TEST_CASE("show-batch's batch: MixUp blends images and captions name both classes",
          "[jobs][show_batch]") {
  ltfit::Config config = shown_config();
  config.train.mixup.mixup_alpha = 0.4;
  const ltfit::Batch batch = flat_batch(4);
  const ltfit::ShownBatch shown = ltfit::batch_as_trained(config, batch, 2, 3);
  CHECK(shown.what == "MixUp/CutMix");
  REQUIRE(shown.targets.defined());
  CHECK(shown.targets.sizes() == torch::IntArrayRef({4, 2}));
  CHECK(torch::allclose(shown.targets.sum(1), torch::ones({4})));
  // Batch mode: image i blended with image 3 - i by the batch's λ, as its target says.
  const double lam = shown.targets[0][0].item<double>();
  const double blended = lam * (40 + 0) + (1 - lam) * (40 + 60);
  CHECK(std::abs(shown.images[0][5][5][0].item<int>() - blended) <= 1.5);
  const std::string caption = ltfit::mixed_caption(shown.targets[0], {"cat", "dog"});
  CHECK_THAT(caption, Catch::Matches("(cat|dog) \\.\\d\\d (cat|dog) \\.\\d\\d") ||
                          Catch::Matches("(cat|dog) 1\\.00"));
}

TEST_CASE("ltfit show-batch says what it applied", "[cli][show_batch]") {
  TempDir dir;
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/data --train 16 --valid 8").exit_code == 0);
  ltfit::testing::write_file(
      dir.path() / "c.yaml",
      "run: {name: shown, seed: 5}\n"
      "data: {root: " +
          (dir.path() / "data").string() +
          ", image_size: 32, batch_size: 8, workers: 1, augment: {random_erasing: {p: 1.0}}}\n"
          "model: {arch: resnet18, pretrained: none, head: linear}\n"
          "train: {recipe: one_cycle, epochs: 2, device: cpu, mixup: {mixup_alpha: 0.4}}\n");
  const std::string png = dir.str() + "/batch.png";
  const auto shown =
      run_ltfit("show-batch --config " + dir.str() + "/c.yaml --epoch 1 --out " + png);
  INFO(shown.output);
  CHECK(shown.exit_code == 0);
  CHECK_THAT(shown.output, Catch::Contains("as the model sees them: random erasing, MixUp/CutMix"));
  CHECK(fs::file_size(png) > 1000);
}
