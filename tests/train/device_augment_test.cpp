// data.augment.on: device (ltfit/train/device_augment.h): the loader then only crops, the hook
// augments each training batch where it lives; `ltfit train` and `ltfit show-batch` run with it.
#include <torch/torch.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "ltfit/data/augment.h"
#include "ltfit/data/loader.h"
#include "ltfit/train/device_augment.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using ltfit::testing::run_ltfit;
using ltfit::testing::TempDir;

TEST_CASE("data.augment.on device: the loader only crops, at the drawn position",
          "[train][augment][loader]") {
  TempDir dir;
  const auto samples = ltfit::testing::write_small_synth(dir.path(), 12, 2, 60, 90, 2);
  ltfit::LoaderOptions options;
  options.data.image_size = 32;
  options.data.batch_size = 4;
  options.train = true;
  options.seed = 3;
  options.data.workers = 2;
  options.data.augment.on = ltfit::AugmentPlace::kDevice;
  ltfit::Loader loader(samples, options);
  loader.start_epoch(1);
  int checked = 0;
  while (auto batch = loader.next()) {
    for (std::size_t i = 0; i < batch->indices.size(); ++i) {
      const std::int64_t position = batch->indices[i];
      const ltfit::AugmentParams params =
          ltfit::draw_augment(options.data.augment, ltfit::sample_seed(3, 1, position));
      std::string error;
      const ltfit::AugmentParams crop_only = ltfit::crop_only(params);
      CHECK_FALSE(crop_only.flip);
      CHECK(crop_only.zoom == 1.0);
      CHECK(crop_only.brightness == 0.5);
      CHECK(crop_only.crop_row_pct == params.crop_row_pct);
      const auto crop = ltfit::load_augmented_image(
          samples[static_cast<std::size_t>(position)].path, 32, crop_only, &error);
      REQUIRE(crop);
      CHECK(torch::equal(batch->images[static_cast<std::int64_t>(i)], *crop));
      ++checked;
    }
  }
  CHECK(checked == 12);
}

TEST_CASE("DeviceAugmentHook: draws per (seed, step, slice)", "[train][augment]") {
  using ltfit::DeviceAugmentHook;
  CHECK(DeviceAugmentHook::batch_seed(1, 0, 0) == DeviceAugmentHook::batch_seed(1, 0, 0));
  CHECK(DeviceAugmentHook::batch_seed(1, 0, 0) != DeviceAugmentHook::batch_seed(1, 1, 0));
  CHECK(DeviceAugmentHook::batch_seed(1, 0, 0) != DeviceAugmentHook::batch_seed(1, 0, 1));
  CHECK(DeviceAugmentHook::batch_seed(1, 0, 0) != DeviceAugmentHook::batch_seed(2, 0, 0));
}

TEST_CASE("ltfit train and show-batch with data.augment.on device", "[cli][augment]") {
  TempDir dir;
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/data --train 16 --valid 8").exit_code == 0);
  ltfit::testing::write_file(dir.path() / "c.yaml",
                             "run: {name: tiny, seed: 5}\n"
                             "data: {root: " +
                                 (dir.path() / "data").string() +
                                 ", image_size: 32, batch_size: 8, workers: 2, augment: {on: "
                                 "device, p_affine: 1.0, p_lighting: 1.0}}\n"
                                 "model: {arch: resnet18, pretrained: none, head: linear}\n"
                                 "train: {recipe: one_cycle, epochs: 2, lr: 2.0e-3, device: cpu}\n"
                                 "eval: {tta: false}\n");
  const auto r =
      run_ltfit("train --config " + dir.str() + "/c.yaml --run-dir " + dir.str() + "/run --json");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json summary = nlohmann::json::parse(r.stdout_text);
  CHECK(summary["epochs"] == 2);
  CHECK(std::isfinite(summary["valid_loss"].get<double>()));
  CHECK_THAT(ltfit::testing::read_file(dir.path() / "run/config.yaml"),
             Catch::Contains("on: device"));
  const std::string png = dir.str() + "/batch.png";
  const auto shown = run_ltfit("show-batch --config " + dir.str() + "/c.yaml --out " + png);
  INFO(shown.output);
  CHECK(shown.exit_code == 0);
  CHECK(fs::file_size(png) > 1000);
}
