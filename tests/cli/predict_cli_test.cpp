// `ltfit predict` on folders, glob patterns and mixes of them, end to end on a generated
// checkpoint (random weights, classes cat and dog, 32 px): what is predicted and in which order,
// --out CSV, --json lines, unreadable files, batching, and every error's exit code. Each ltfit
// runs with its address space capped, so a regression fails instead of eating the machine.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "jobs/jobs_fixtures.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/model/torch_weights.h"
#include "support/child_cap.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::CommandResult;
using ltfit::testing::TempDir;
using ltfit::testing::write_file;

namespace {

CommandResult predict(const std::string& args) {
  return ltfit::testing::run_ltfit("predict " + args, ltfit::testing::child_address_space_cap());
}

// A checkpoint (32 px, batch 4, cat/dog) in `dir`/run, and a folder `dir`/photos of generated
// images: photos/{train,valid}/{cat,dog}/*.jpg, plus a text file, a hidden image and (with
// `broken`) an unreadable photos/zz/broken.jpg. Returns the checkpoint's path.
std::string setup(const TempDir& dir, bool broken = true) {
  const fs::path ckpt = dir.path() / "run/checkpoints/last.ckpt";
  ltfit::testing::write_job_checkpoint(
      ckpt, ltfit::testing::tiny_job_config(dir.path() / "data", dir.path() / "runs"));
  ltfit::testing::write_small_synth(dir.path() / "photos", 6, 4, 40, 60, 3);
  write_file(dir.path() / "photos/notes.txt", "not an image, not an image name");
  fs::copy_file(dir.path() / "photos/train/cat/00000.jpg", dir.path() / "photos/.hidden.jpg");
  if (broken) write_file(dir.path() / "photos/zz/broken.jpg", "not an image");
  return ckpt.string();
}

// The images under `dir` (recursive) with an image extension, sorted, hidden ones left out.
std::vector<std::string> images_under(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && name[0] != '.' && e.path().extension() == ".jpg")
      out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<nlohmann::json> json_lines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

std::vector<std::string> json_images(const std::vector<nlohmann::json>& lines) {
  std::vector<std::string> out;
  for (const auto& j : lines) out.push_back(j["image"].get<std::string>());
  return out;
}

// Rows of a CSV whose fields hold no comma or quote.
std::vector<std::vector<std::string>> read_csv(const fs::path& path) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream text(ltfit::testing::read_file(path));
  for (std::string line; std::getline(text, line);) {
    rows.emplace_back();
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) rows.back().push_back(cell);
  }
  return rows;
}

}  // namespace

TEST_CASE("predict on a folder: recursive, images only, sorted - --out CSV and --json lines",
          "[cli][predict]") {
  TempDir dir;
  const std::string ckpt = setup(dir);
  const fs::path csv = dir.path() / "out/sub/p.csv";  // missing folders are created
  const auto r = predict("--json --batch-size 3 --checkpoint " + ckpt + " --out " + csv.string() +
                         " " + dir.str() + "/photos/");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::vector<std::string> expected = images_under(dir.path() / "photos");
  REQUIRE(expected.size() == 6 + 4 + 1);  // the broken one included, notes.txt and .hidden not
  const auto lines = json_lines(r.stdout_text);  // one object per image and line
  CHECK(json_images(lines) == expected);
  for (const auto& j : lines) {
    INFO(j.dump());
    if (j["image"].get<std::string>().find("broken") != std::string::npos) {
      CHECK(j.contains("error"));
      continue;
    }
    REQUIRE(j["top"].size() == 2);
    CHECK(j["top"][0]["probability"].get<double>() + j["top"][1]["probability"].get<double>() ==
          Approx(1.0).epsilon(1e-5));
  }
  CHECK_THAT(r.output, Contains("broken.jpg") && Contains("1 unreadable skipped") &&
                           Contains("predicted 10 images in") && Contains("images/s"));

  const auto rows = read_csv(csv);
  REQUIRE(rows.size() == 1 + 10);  // one row per readable image
  CHECK(rows[0] == std::vector<std::string>{"path", "predicted", "prob_cat", "prob_dog"});
  std::vector<std::string> readable;
  for (const auto& path : expected)
    if (path.find("broken") == std::string::npos) readable.push_back(path);
  for (std::size_t i = 1; i < rows.size(); ++i) {
    INFO("row " << i);
    REQUIRE(rows[i].size() == 4);
    CHECK(rows[i][0] == readable[i - 1]);
    const double cat = std::stod(rows[i][2]), dog = std::stod(rows[i][3]);
    CHECK(cat + dog == Approx(1.0).epsilon(1e-4));
    CHECK(rows[i][1] == (cat >= dog ? "cat" : "dog"));
  }
}

TEST_CASE("predict: batches of any size give the same probabilities, in order", "[cli][predict]") {
  TempDir dir;
  const std::string ckpt = setup(dir);
  const std::string base = "--checkpoint " + ckpt + " " + dir.str() + "/photos --out ";
  REQUIRE(predict("--batch-size 1 " + base + dir.str() + "/one.csv").exit_code == 0);
  REQUIRE(predict("--batch-size 7 " + base + dir.str() + "/seven.csv").exit_code == 0);
  const auto one = read_csv(dir.path() / "one.csv");
  const auto seven = read_csv(dir.path() / "seven.csv");
  REQUIRE(one.size() == 11);
  REQUIRE(seven.size() == one.size());
  for (std::size_t i = 1; i < one.size(); ++i) {
    INFO("row " << i);
    CHECK(seven[i][0] == one[i][0]);
    CHECK(std::stod(seven[i][2]) == Approx(std::stod(one[i][2])).margin(1e-4));
  }
}

TEST_CASE("predict on a glob, and on a mix of a file, a folder and a glob", "[cli][predict]") {
  TempDir dir;
  const std::string ckpt = setup(dir, /*broken=*/false);
  const std::string photos = dir.str() + "/photos";
  // Quoted: ltfit expands the pattern itself.
  auto r = predict("--json --checkpoint " + ckpt + " '" + photos + "/*/cat/*.jpg'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> cats = images_under(photos + "/train/cat");
  const auto valid_cats = images_under(photos + "/valid/cat");
  cats.insert(cats.end(), valid_cats.begin(), valid_cats.end());
  CHECK(json_images(json_lines(r.stdout_text)) == cats);

  // In the arguments' order, each image once: the file, then the folder's, then the pattern's.
  const std::string file = photos + "/valid/dog/00000.jpg";
  r = predict("--json --checkpoint " + ckpt + " " + file + " " + photos + "/valid '" + photos +
              "/train/d?g/*.jpg' " + file);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> expected = {file};
  for (const auto& p : images_under(photos + "/valid"))
    if (p != file) expected.push_back(p);
  const auto train_dogs = images_under(photos + "/train/dog");
  expected.insert(expected.end(), train_dogs.begin(), train_dogs.end());
  CHECK(json_images(json_lines(r.stdout_text)) == expected);

  // --tta on a folder: TTA and plain probabilities per image.
  r = predict("--json --tta --checkpoint " + ckpt + " " + photos + "/valid");
  REQUIRE(r.exit_code == 0);
  const auto lines = json_lines(r.stdout_text);
  REQUIRE(lines.size() == 4);
  for (const auto& j : lines) CHECK(j["tta"] == "v1");
}

TEST_CASE("predict errors: a folder without images, no match, a missing path, none readable",
          "[cli][predict]") {
  TempDir dir;
  const std::string ckpt = setup(dir);
  const std::string base = "--checkpoint " + ckpt + " ";
  fs::create_directories(dir.path() / "empty/sub");
  write_file(dir.path() / "empty/sub/readme.txt", "no images here");
  auto r = predict(base + dir.str() + "/empty");
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.output, Contains("folder '" + dir.str() + "/empty' holds no image file"));

  r = predict(base + "'" + dir.str() + "/photos/*.png'");
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.output, Contains("'" + dir.str() + "/photos/*.png' matches no image file"));

  r = predict(base + dir.str() + "/photos/train " + dir.str() + "/nothing.jpg");
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.output, Contains("'" + dir.str() + "/nothing.jpg' does not exist"));

  r = predict(base + dir.str() + "/photos/zz");  // nothing readable
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.output, Contains("none of the 1 image(s) could be read"));
}

TEST_CASE("predict errors: an unwritable --out before any work, bad --batch-size, --device",
          "[cli][predict]") {
  TempDir dir;
  const std::string ckpt = setup(dir);
  const std::string base = "--checkpoint " + ckpt + " ";
  // An --out that cannot be written fails before the model is loaded or an image read.
  write_file(dir.path() / "afile", "x");
  const auto r = predict(base + "--out " + dir.str() + "/afile/p.csv " + dir.str() + "/photos");
  CHECK(r.exit_code == 5);
  CHECK_THAT(r.output,
             Contains("cannot write predictions file (--out) '" + dir.str() + "/afile/p.csv'"));
  CHECK_THAT(r.output, !Contains("predicting") && !Contains("predicted"));
  // A folder whose permission bits allow writing (to root) but where no file can be created.
  const auto proc = predict(base + "--out /proc/ltfit-test-p.csv " + dir.str() + "/photos");
  CHECK(proc.exit_code == 5);
  CHECK_THAT(proc.output,
             Contains("cannot write predictions file (--out) '/proc/ltfit-test-p.csv'"));
  CHECK_THAT(proc.output, !Contains("predicted"));

  CHECK(predict(base + "--batch-size 0 " + dir.str() + "/photos").exit_code == 2);
  CHECK(predict(base + "--batch-size -2 " + dir.str() + "/photos").exit_code == 2);
  CHECK(predict(base + "--device cuda:7 " + dir.str() + "/photos").exit_code == 2);
}

TEST_CASE("predict --weights on a folder: ImageNet classes, 224 px crop, batched",
          "[cli][predict]") {
  TempDir dir;
  ltfit::testing::write_small_synth(dir.path() / "photos", 2, 4, 40, 60, 3);
  // A torchvision-shaped file: resnet18 with its 1000-class fc (random weights, no description
  // beside it). An export of a checkpoint is not one: its own classes are used (as its own
  // test in predict_weights_cli_test.cpp shows), never ImageNet's.
  const std::string pth = dir.str() + "/model.pth";
  torch::manual_seed(3);
  ltfit::Classifier imagenet = ltfit::make_classifier("resnet18", 1000);
  ltfit::write_torch_state_dict(pth, ltfit::testing::state_dict_of(imagenet));
  const fs::path csv = dir.path() / "imagenet.csv";
  const auto r = predict("--json --weights " + pth + " --arch resnet18 --batch-size 2 --out " +
                         csv.string() + " " + dir.str() + "/photos/valid");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto lines = json_lines(r.stdout_text);
  REQUIRE(lines.size() == 4);
  for (const auto& j : lines) CHECK(j["top"].size() == 5);
  const auto rows = read_csv(csv);
  REQUIRE(rows.size() == 1 + 4);
  REQUIRE(rows[0].size() == 2 + 1000);
  CHECK(rows[0][2] == "prob_tench");  // ImageNet's class 0
}
