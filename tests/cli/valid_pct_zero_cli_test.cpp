// `data.valid_pct: 0`, training on all the data (issue 44), end to end: every image trains, the
// log and summary.json say there is no validation, no figure is made up (accuracy null, NaN in
// epochs.csv), best.ckpt is the last epoch's, predict reads the run, evaluate says there is no
// validation split to evaluate (exit 3); what judges by validation
// (early stopping, the plateau schedule) is refused before training. The run also frames its
// images with data.resize_method squish and data.augment.crop random_resized. Tiny runs: 32 px,
// 16 images, CPU.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "ltfit/train/checkpoint.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::read_file;
using ltfit::testing::run_ltfit;
using ltfit::testing::TempDir;

namespace {

std::string all_data_config(const fs::path& root, const std::string& train_extra) {
  return "run: {name: all, seed: 3, deterministic: true}\n"
         "data: {root: " +
         root.string() +
         ", layout: kaggle, valid_pct: 0, image_size: 32, batch_size: 8, workers: 1,\n"
         "       resize_method: squish, augment: {crop: random_resized, scale: [0.3, 1]}}\n"
         "model: {arch: resnet18, pretrained: none, head: linear}\n"
         "train: {recipe: one_cycle, epochs: 2, lr: 2.0e-3, device: cpu" +
         train_extra + "}\n";
}

// 16 synthetic cats and dogs in Kaggle's flat layout (12 + 4: valid_pct 0 trains on them all).
void make_kaggle_images(const fs::path& data) {
  REQUIRE(
      run_ltfit("synth --out " + data.string() + " --layout kaggle --train 12 --valid 4 --seed 2")
          .exit_code == 0);
}

}  // namespace

TEST_CASE("data.valid_pct 0 trains on every image and says there is no validation",
          "[cli][valid_pct]") {
  TempDir dir;
  const fs::path data = dir.path() / "data";
  make_kaggle_images(data);
  ltfit::testing::write_file(dir.path() / "c.yaml", all_data_config(data, ""));
  const fs::path run = dir.path() / "run";
  const auto trained = run_ltfit("train --config " + (dir.path() / "c.yaml").string() +
                                 " --run-dir " + run.string());
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);
  CHECK_THAT(trained.output, Contains("16 train / 0 valid images"));
  CHECK_THAT(trained.output, Contains("validation: none (data.valid_pct 0)"));
  CHECK_THAT(trained.output,
             Contains("no validation (data.valid_pct 0), the last epoch's weights"));
  const auto summary = nlohmann::json::parse(read_file(run / "summary.json"));
  CHECK(summary["train_images"] == 16);
  CHECK(summary["valid_images"] == 0);
  CHECK(summary["accuracy"].is_null());
  CHECK(summary["valid_loss"].is_null());
  CHECK(summary["tta_accuracy"].is_null());
  CHECK(summary["validation"].get<std::string>().rfind("none (data.valid_pct 0)", 0) == 0);
  CHECK_THAT(read_file(run / "epochs.csv"), Contains(",nan,nan,nan,"));
  // best.ckpt: the last epoch's weights.
  const auto best = ltfit::read_checkpoint_meta((run / "checkpoints/best.ckpt").string());
  CHECK(best.epochs_done == 2);
  const auto predicted =
      run_ltfit("predict --checkpoint " + (run / "checkpoints/best.ckpt").string() + " --json " +
                (data / "train").string());
  INFO(predicted.output);
  CHECK(predicted.exit_code == 0);
  // evaluate (and interpret, calibrate) of its validation split: there is none, said so (exit 3).
  const auto evaluated =
      run_ltfit("evaluate --checkpoint " + (run / "checkpoints/best.ckpt").string());
  CHECK(evaluated.exit_code == 3);
  CHECK_THAT(evaluated.output, Contains("has no validation split") && Contains("--split train"));

  // What needs validation is refused, naming the key, before any training (exit 2).
  for (const std::string& extra :
       {std::string(", early_stopping: {patience: 2}"), std::string(", schedule: plateau")}) {
    ltfit::testing::write_file(dir.path() / "bad.yaml", all_data_config(data, extra));
    const auto refused = run_ltfit("train --config " + (dir.path() / "bad.yaml").string() +
                                   " --run-dir " + (dir.path() / "bad").string());
    INFO(refused.output);
    CHECK(refused.exit_code == 2);
    CHECK_THAT(refused.output, Contains("data.valid_pct 0 leaves no validation split"));
  }
}

TEST_CASE("data.valid_pct 0: a stopped run resumes and finishes", "[cli][valid_pct][resume]") {
  TempDir dir;
  const fs::path data = dir.path() / "data";
  make_kaggle_images(data);
  std::string config = all_data_config(data, ", time_limit: 3s, checkpoint: {every_minutes: 0}");
  const std::string two = "epochs: 2";
  config.replace(config.find(two), two.size(), "epochs: 40");
  ltfit::testing::write_file(dir.path() / "c.yaml", config);
  const fs::path run = dir.path() / "run";
  const auto stopped = run_ltfit("train --config " + (dir.path() / "c.yaml").string() +
                                 " --run-dir " + run.string());
  INFO(stopped.output);
  REQUIRE(stopped.exit_code == 130);  // the time limit: a checkpoint, then a stop
  const int done =
      ltfit::read_checkpoint_meta((run / "checkpoints/last.ckpt").string()).epochs_done;
  CHECK(done >= 1);  // past an epoch's end: best.ckpt and its record (NaN accuracy) exist
  CHECK(done < 40);
  // The checkpoints' best record holds an unmeasured (NaN) accuracy: read back, not refused.
  const auto resumed =
      run_ltfit("train --resume auto --run-dir " + run.string() + " --set train.time_limit=null");
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  const auto summary = nlohmann::json::parse(read_file(run / "summary.json"));
  CHECK(summary["epochs"] == 40);
  CHECK(summary["best_accuracy"].is_null());
  CHECK(ltfit::read_checkpoint_meta((run / "checkpoints/best.ckpt").string()).epochs_done == 40);
}
