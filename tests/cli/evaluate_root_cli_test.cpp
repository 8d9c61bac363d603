// `ltfit evaluate --data` on a dataset root (issue 13): train/ valid/ (test/) folders of class
// folders, split by --split (valid by default), or Kaggle's flat <class>.<N>.jpg files split as
// training split them; a --split the root lacks exits 3 naming the splits it has. End to end on
// generated checkpoints (random weights, cat/dog, 32 px), under an address-space cap.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>
#include <sstream>

#include "jobs/jobs_fixtures.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/data/synth.h"
#include "support/child_cap.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::CommandResult;
using ltfit::testing::TempDir;

namespace {

CommandResult evaluate(const std::string& args) {
  return ltfit::testing::run_ltfit("evaluate " + args, ltfit::testing::child_address_space_cap());
}

nlohmann::json evaluate_json(const std::string& args) {
  const CommandResult r = evaluate("--json " + args);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.stdout_text);
}

// The image paths of predictions.csv in `dir` (paths hold no comma here).
std::set<std::string> csv_paths(const fs::path& dir) {
  std::set<std::string> paths;
  std::istringstream text(ltfit::testing::read_file(dir / "predictions.csv"));
  std::string line;
  std::getline(text, line);  // header
  while (std::getline(text, line)) paths.insert(line.substr(0, line.find(',')));
  return paths;
}

// A generated folders-layout root (6 train, 4 valid images) and a checkpoint whose own
// data.root is elsewhere, so that --data alone decides. Returns "--checkpoint C --out O ".
std::string setup_root(const TempDir& dir) {
  ltfit::testing::write_small_synth(dir.path() / "data", 6, 4, 40, 60, 3);
  const fs::path ckpt = dir.path() / "run/checkpoints/last.ckpt";
  ltfit::testing::write_job_checkpoint(
      ckpt, ltfit::testing::tiny_job_config(dir.path() / "elsewhere", dir.path() / "runs"));
  return "--checkpoint " + ckpt.string() + " --out " + dir.str() + "/o ";
}

}  // namespace

TEST_CASE("evaluate --data <root>: the valid split by default, --split train", "[cli][evaluate]") {
  TempDir dir;
  const std::string base = setup_root(dir);
  const fs::path root = dir.path() / "data";
  const CommandResult r = evaluate("--json " + base + "--data " + root.string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output,
             Contains("on " + root.string() + "/valid (split valid): 4 images of 2 classes"));
  auto j = nlohmann::json::parse(r.stdout_text);
  CHECK(j["images"] == 4);  // the valid folder's
  CHECK(j["split"] == "valid");
  CHECK(j["data"] == (root / "valid").string());
  const auto paths = csv_paths(dir.path() / "o");
  CHECK(paths.size() == 4);
  for (const auto& path : paths) CHECK(path.rfind((root / "valid").string() + "/", 0) == 0);

  j = evaluate_json(base + "--data " + root.string() + " --split train");
  CHECK(j["images"] == 6);
  CHECK(j["split"] == "train");
  CHECK(j["data"] == (root / "train").string());
}

TEST_CASE("evaluate --split test: exit 3 naming the splits, then test/ once it exists",
          "[cli][evaluate]") {
  TempDir dir;
  const std::string base = setup_root(dir);
  const fs::path root = dir.path() / "data";
  const CommandResult missing = evaluate(base + "--data " + root.string() + " --split test");
  CHECK(missing.exit_code == 3);
  CHECK_THAT(missing.output, Contains("dataset root '" + root.string() + "' has no split 'test'") &&
                                 Contains("its splits: train, valid"));
  fs::copy(root / "valid", root / "test", fs::copy_options::recursive);
  const CommandResult r = evaluate(base + "--data " + root.string() + " --split test");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.stdout_text, Contains("data: " + root.string() + "/test (split test)"));
  CHECK(csv_paths(dir.path() / "o").size() == 4);
  CHECK(evaluate(base + "--data " + root.string() + " --split validation").exit_code == 2);
}

TEST_CASE("evaluate --data <class folders> as before - --split there is a usage error",
          "[cli][evaluate]") {
  TempDir dir;
  const std::string base = setup_root(dir);
  const fs::path train = dir.path() / "data/train";
  const auto j = evaluate_json(base + "--data " + train.string());
  CHECK(j["images"] == 6);
  CHECK(j["split"].is_null());
  CHECK(j["data"] == train.string());
  CHECK(evaluate(base + "--data " + train.string() + " --split train").exit_code == 2);
  CHECK(evaluate(base + "--data " + dir.str() + "/nowhere").exit_code == 3);
}

TEST_CASE("evaluate --data <Kaggle flat root>: the checkpoint's own seeded split",
          "[cli][evaluate]") {
  TempDir dir;
  const fs::path root = dir.path() / "kaggle";
  ltfit::SynthOptions synth;
  synth.out_dir = root.string();
  synth.train = 8;  // kaggle: 12 images in one folder, the split is the config's
  synth.valid = 4;
  synth.layout = "kaggle";
  synth.min_side = 40;
  synth.max_side = 60;
  ltfit::write_synthetic_dataset(synth);
  const std::string config =
      "run: {name: k, out_dir: \"" + dir.str() + "/runs\", seed: 9}\n" + "data: {root: \"" +
      root.string() + "\", layout: kaggle, valid_count: 5, image_size: 32, batch_size: 4, " +
      "workers: 1}\n" + "model: {arch: resnet18, pretrained: none, head: linear}\n" +
      "train: {recipe: one_cycle, epochs: 1, lr: 2.0e-3, device: cpu}\n" + "eval: {tta: false}\n";
  const fs::path ckpt = dir.path() / "run/checkpoints/last.ckpt";
  ltfit::testing::write_job_checkpoint(ckpt, config);
  ltfit::DataConfig data;
  data.root = root.string();
  data.layout = ltfit::DataLayout::kKaggle;
  data.valid_count = 5;
  const ltfit::DatasetIndex index = ltfit::index_dataset(data, 9, false);  // what training took
  std::set<std::string> valid, train;
  for (const auto& s : index.valid) valid.insert(s.path);
  for (const auto& s : index.train) train.insert(s.path);

  const std::string base = "--checkpoint " + ckpt.string() + " --out " + dir.str() + "/o ";
  auto j = evaluate_json(base + "--data " + root.string());
  CHECK(j["images"] == 5);
  CHECK(j["split"] == "valid");
  CHECK(csv_paths(dir.path() / "o") == valid);
  j = evaluate_json(base + "--data " + root.string() + " --split train");
  CHECK(j["images"] == 7);
  CHECK(csv_paths(dir.path() / "o") == train);
  const CommandResult missing = evaluate(base + "--data " + root.string() + " --split test");
  CHECK(missing.exit_code == 3);
  CHECK_THAT(missing.output, Contains("has no split 'test'") && Contains("train, valid"));
}
