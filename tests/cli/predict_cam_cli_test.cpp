// `ltfit predict --cam DIR` end to end on a generated checkpoint (random weights, classes cat and
// dog, 32 px) and on a torchvision-shaped weight file: one Grad-CAM picture per readable image,
// named after the image (a counter for a stem met before), of the expected size, its path in
// --json and in the text output; an unwritable folder fails before any image is predicted, and
// --cam with --tta is a usage error. Each ltfit runs with its address space capped.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "jobs/jobs_fixtures.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/model/torch_weights.h"
#include "support/child_cap.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::CommandResult;
using ltfit::testing::TempDir;

namespace {

CommandResult predict_cam(const std::string& args) {
  return ltfit::testing::run_ltfit("predict " + args, ltfit::testing::child_address_space_cap());
}

// A checkpoint (32 px, cat/dog) in `dir`/run and generated photos in `dir`/photos:
// {train,valid}/{cat,dog}/0000N.jpg, so that the same file names recur in several folders.
std::string cam_setup(const TempDir& dir) {
  const fs::path ckpt = dir.path() / "run/checkpoints/last.ckpt";
  ltfit::testing::write_job_checkpoint(
      ckpt, ltfit::testing::tiny_job_config(dir.path() / "data", dir.path() / "runs"));
  ltfit::testing::write_small_synth(dir.path() / "photos", 6, 4, 40, 60, 3);
  return ckpt.string();
}

std::vector<nlohmann::json> cam_json_lines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

// The picture's image beside its overlay, each with a caption row under it, as
// pictures/image_grid.h lays out two tiles of `side` px (scaled up to 160 px when smaller).
cv::Size expected_picture_size(int side) {
  const int tile = std::max(side, 160);
  return {2 * (tile + 6) + 6, tile + 22 + 6 + 6};
}

// Reads a written picture; an empty Mat when it is missing or no PNG.
cv::Mat read_picture(const std::string& path) { return cv::imread(path, cv::IMREAD_COLOR); }

}  // namespace

TEST_CASE("predict --cam: a picture per image, named after it, in --json and the text output",
          "[cli][predict]") {
  TempDir dir;
  const std::string ckpt = cam_setup(dir);
  const fs::path cams = dir.path() / "out/cams";  // missing folders are created
  const auto r = predict_cam("--json --batch-size 3 --checkpoint " + ckpt + " --cam " +
                             cams.string() + " " + dir.str() + "/photos/valid");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto lines = cam_json_lines(r.stdout_text);
  REQUIRE(lines.size() == 4);  // valid/cat/00000 00001, valid/dog/00000 00001 (sorted)
  // valid/dog's images have the stems valid/cat's had: a counter keeps them apart.
  const std::vector<std::string> names = {"00000_cam.png", "00001_cam.png", "00000_2_cam.png",
                                          "00001_2_cam.png"};
  for (std::size_t i = 0; i < lines.size(); ++i) {
    INFO(lines[i].dump());
    REQUIRE(lines[i].contains("cam"));
    CHECK(lines[i]["cam"] == (cams / names[i]).string());
    const cv::Mat picture = read_picture(lines[i]["cam"].get<std::string>());
    REQUIRE_FALSE(picture.empty());
    CHECK(picture.size() == expected_picture_size(32));
    // The overlay is not the image: the heat map's colours are blended in.
    const cv::Rect left(6, 6, 160, 160), right(6 + 166, 6, 160, 160);
    CHECK(cv::norm(picture(left), picture(right), cv::NORM_L1) > 160.0 * 160.0);
  }
  CHECK(std::distance(fs::directory_iterator(cams), fs::directory_iterator{}) == 4);
  CHECK_THAT(r.output, Contains("wrote 4 Grad-CAM picture(s) to " + cams.string()));

  // Without --json, each prediction names its picture; a second run writes the same names again.
  const auto text = predict_cam("--checkpoint " + ckpt + " --cam " + cams.string() + " " +
                                dir.str() + "/photos/valid/cat/00000.jpg");
  INFO(text.output);
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.stdout_text, Contains("  Grad-CAM: " + (cams / "00000_cam.png").string()));
}

TEST_CASE("predict --cam with --weights: ImageNet's classes at the 224 px eval crop",
          "[cli][predict]") {
  TempDir dir;
  ltfit::testing::write_small_synth(dir.path() / "photos", 2, 2, 40, 60, 3);
  const std::string pth = dir.str() + "/model.pth";
  torch::manual_seed(3);
  ltfit::Classifier imagenet = ltfit::make_classifier("resnet18", 1000);
  ltfit::write_torch_state_dict(pth, ltfit::testing::state_dict_of(imagenet));
  const fs::path cams = dir.path() / "cams";
  const auto r = predict_cam("--json --weights " + pth + " --arch resnet18 --cam " + cams.string() +
                             " " + dir.str() + "/photos/valid");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto lines = cam_json_lines(r.stdout_text);
  REQUIRE(lines.size() == 2);
  for (const auto& j : lines) {
    INFO(j.dump());
    const cv::Mat picture = read_picture(j["cam"].get<std::string>());
    REQUIRE_FALSE(picture.empty());
    CHECK(picture.size() == expected_picture_size(224));
  }
}

TEST_CASE("predict --cam errors: an unwritable folder before any work, --cam with --tta",
          "[cli][predict]") {
  TempDir dir;
  const std::string ckpt = cam_setup(dir);
  const std::string photos = dir.str() + "/photos/valid";
  ltfit::testing::write_file(dir.path() / "afile", "x");
  auto r = predict_cam("--checkpoint " + ckpt + " --cam " + dir.str() + "/afile/cams " + photos);
  CHECK(r.exit_code == 5);
  CHECK_THAT(r.output, Contains("cannot write Grad-CAM picture (--cam) '" + dir.str() +
                                "/afile/cams/<image>_cam.png'") &&
                           Contains("is not a folder"));
  CHECK_THAT(r.output, !Contains("predicting") && !Contains("predicted"));
  // A folder whose permission bits allow writing (to root) but where nothing can be created.
  r = predict_cam("--checkpoint " + ckpt + " --cam /proc/ltfit-test-cams " + photos);
  CHECK(r.exit_code == 5);
  CHECK_THAT(r.output, Contains("cannot write Grad-CAM picture (--cam) '/proc/ltfit-test-cams/"));
  CHECK_THAT(r.output, !Contains("predicted"));

  r = predict_cam("--tta --checkpoint " + ckpt + " --cam " + dir.str() + "/cams " + photos);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("--cam explains plain predictions, not --tta ones"));
  CHECK_FALSE(fs::exists(dir.path() / "cams"));
}
