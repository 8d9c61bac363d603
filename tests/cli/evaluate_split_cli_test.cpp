// `ltfit evaluate --split train|valid` for every layout a checkpoint may have been trained on: a
// drawn split (class folders alone), a CSV file, a multi-label CSV; and `--data` on a test folder
// that lacks some of the model's classes (evaluated, those classes with support 0).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iterator>

#include "jobs/jobs_fixtures.h"
#include "ltfit/data/dataset_index.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::CommandResult;
using ltfit::testing::run_ltfit;
using ltfit::testing::TempDir;

namespace {

nlohmann::json split_evaluate_json(const std::string& args) {
  const CommandResult r = run_ltfit("evaluate --json " + args);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.stdout_text);
}

// A checkpoint of random weights whose config reads `data_yaml` (the inside of `data: {...}`).
std::string split_checkpoint_with(const TempDir& dir, const std::string& data_yaml) {
  const std::string config = "run: {name: t, out_dir: \"" + dir.str() + "/runs\", seed: 5}\n" +
                             "data: {" + data_yaml + ", image_size: 32, batch_size: 4, " +
                             "workers: 1}\nmodel: {arch: resnet18, pretrained: none, " +
                             "head: linear}\ntrain: {device: cpu}\neval: {tta: false}\n";
  const fs::path ckpt = dir.path() / "run/checkpoints/last.ckpt";
  ltfit::testing::write_job_checkpoint(ckpt, config);
  return "--checkpoint " + ckpt.string() + " --out " + dir.str() + "/o ";
}

}  // namespace

TEST_CASE("evaluate --split train|valid on a drawn split: the checkpoint's own split",
          "[cli][evaluate]") {
  TempDir dir;
  ltfit::testing::write_small_synth(dir.path() / "data", 12, 4, 40, 60, 3);
  const fs::path classes = dir.path() / "data/train";  // cat/ dog/ alone: a split is drawn
  const std::string base =
      split_checkpoint_with(dir, "root: \"" + classes.string() + "\", valid_pct: 0.25");
  ltfit::DataConfig data;
  data.root = classes.string();
  data.valid_pct = 0.25;
  const ltfit::DatasetIndex index = ltfit::index_dataset(data, 5, false);
  auto j = split_evaluate_json(base + "--split train");
  CHECK(j["images"] == index.train.size());
  CHECK(j["data"] == classes.string());  // a folder that exists: the root, not root/train
  j = split_evaluate_json(base + "--split valid");
  CHECK(j["images"] == index.valid.size());
  CHECK(split_evaluate_json(base)["images"] == index.valid.size());
}

TEST_CASE("evaluate --split train on a CSV checkpoint, single- and multi-label",
          "[cli][evaluate]") {
  TempDir dir;
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/data --train 12 --valid 8 --seed 3 " +
                    "--task shapes --layout csv")
              .exit_code == 0);
  const fs::path config = dir.path() / "c.yaml";
  ltfit::testing::write_file(
      config, "run: {name: m, out_dir: " + dir.str() + "/runs, seed: 5}\ndata: {root: " +
                  dir.str() + "/data, layout: csv, csv: {valid_column: is_valid, " +
                  "label_delim: ' '}, image_size: 32, batch_size: 4, workers: 1}\n" +
                  "model: {arch: resnet18, pretrained: none, head: linear}\n" +
                  "train: {recipe: one_cycle, epochs: 1, device: cpu}\neval: {tta: false}\n");
  const CommandResult trained = run_ltfit("train --config " + config.string());
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);
  const std::string ckpt = "--checkpoint " + dir.str() + "/runs/m/checkpoints/best.ckpt ";
  const nlohmann::json train =
      split_evaluate_json(ckpt + "--split train --out " + dir.str() + "/o");
  CHECK(train["images"] == 12);
  CHECK(train["split"] == "train");
  CHECK(split_evaluate_json(ckpt + "--out " + dir.str() + "/o")["images"] == 8);
  CHECK(run_ltfit("evaluate " + ckpt + "--split test").exit_code == 2);
}

TEST_CASE("evaluate --data: a test folder lacking a class is evaluated, that class at support 0",
          "[cli][evaluate]") {
  TempDir dir;
  ltfit::testing::write_small_synth(dir.path() / "data", 6, 4, 40, 60, 3);
  const std::string base = split_checkpoint_with(dir, "root: \"" + dir.str() + "/elsewhere\"");
  const auto cats = std::distance(fs::directory_iterator(dir.path() / "data/valid/cat"),
                                  fs::directory_iterator());
  REQUIRE(cats > 0);
  fs::remove_all(dir.path() / "data/valid/dog");
  const CommandResult r =
      run_ltfit("evaluate --json " + base + "--data " + dir.str() + "/data/valid");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("no images of class(es) dog") && Contains("support 0"));
  const auto j = nlohmann::json::parse(r.stdout_text);
  CHECK(j["images"] == cats);
  // A folder holding none of the classes is still an error.
  fs::create_directories(dir.path() / "empty/bird");
  CHECK(run_ltfit("evaluate " + base + "--data " + dir.str() + "/empty").exit_code == 3);
}
