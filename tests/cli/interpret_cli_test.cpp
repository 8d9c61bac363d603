// `ltfit interpret` end to end on a tiny trained checkpoint: the top losses with Grad-CAM, the
// most confused pairs, the confusion matrix, the TensorBoard pictures, the exit codes.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::run_ltfit;

namespace {

// A seconds-long CPU run on a generated two-class set under `dir`; its last checkpoint.
fs::path train_tiny_interpret(const ltfit::testing::TempDir& dir, const std::string& extra = "",
                              const std::string& synth = "", const std::string& data_yaml = "") {
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/data --train 16 --valid 12 --seed 3 " + synth)
              .exit_code == 0);
  const fs::path config = dir.path() / "c.yaml";
  ltfit::testing::write_file(
      config, "run: {name: tiny, out_dir: " + dir.str() + "/runs, seed: 5" + extra + "}\n" +
                  "data: {root: " + dir.str() + "/data, image_size: 32, batch_size: 4, " +
                  "workers: 2" + data_yaml + "}\n" + "model: {arch: resnet18, pretrained: none}\n" +
                  "train: {recipe: one_cycle, epochs: 1, lr: 2.0e-3, device: cpu}\n");
  const auto trained = run_ltfit("train --config " + config.string());
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);
  return dir.path() / "runs/tiny/checkpoints/last.ckpt";
}

std::size_t line_count(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST_CASE("interpret writes the top losses with Grad-CAM and the most confused pairs",
          "[cli][interpret]") {
  ltfit::testing::TempDir dir;
  const fs::path ckpt = train_tiny_interpret(dir, ", tensorboard: true");
  const auto r = run_ltfit("interpret --json --top 5 --checkpoint " + ckpt.string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.stdout_text);
  const fs::path out = dir.path() / "runs/tiny/interpret";  // the run directory's by default
  CHECK(j["out_dir"] == out.string());
  REQUIRE(j["top_losses"].size() == 5);
  double last = 1e9;
  for (const auto& t : j["top_losses"]) {  // highest first, loss = -ln p(actual)
    CHECK(t["loss"].get<double>() <= last + 1e-12);
    last = t["loss"].get<double>();
    CHECK(t["loss"].get<double>() ==
          Approx(-std::log(t["probability"].get<double>())).margin(1e-6));
  }
  // The pairs and the confusion matrix agree: each pair's count is its cell.
  const auto& confusion = j["evaluation"]["confusion"];
  for (const auto& p : j["most_confused"]) {
    const int a = p["actual"] == "cat" ? 0 : 1, b = 1 - a;
    CHECK(p["count"] == confusion[a][b]);
  }
  for (const char* name : {"top_losses.png", "top_losses.csv", "most_confused.csv",
                           "confusion_matrix.png", "predictions.csv"}) {
    CHECK(fs::exists(out / name));
  }
  // Five tiles of image | overlay, each half at least 160 px (32 px scaled by 5), 3 columns.
  const cv::Mat png = cv::imread((out / "top_losses.png").string());
  REQUIRE(!png.empty());
  CHECK(png.cols >= 3 * (2 * 160));
  CHECK(png.rows >= 2 * 160);
  CHECK(line_count(ltfit::testing::read_file(out / "top_losses.csv")) == 6);
  CHECK(line_count(ltfit::testing::read_file(out / "most_confused.csv")) ==
        1 + j["most_confused"].size());
  // The pictures went into the run's TensorBoard folder too.
  const std::string events = j["tensorboard_events"];
  REQUIRE(!events.empty());
  CHECK(fs::path(events).parent_path() == dir.path() / "runs/tiny/tb");
  CHECK_THAT(ltfit::testing::read_file(events), Contains("interpret/top_losses"));
}

TEST_CASE("interpret refuses bad arguments with the documented exit codes", "[cli][interpret]") {
  ltfit::testing::TempDir dir;
  const fs::path ckpt = train_tiny_interpret(dir);
  const auto top = run_ltfit("interpret --top 0 --checkpoint " + ckpt.string());
  CHECK(top.exit_code == 2);
  CHECK_THAT(top.output, Contains("--top"));
  const auto missing =
      run_ltfit("interpret --checkpoint " + dir.str() + "/nope.ckpt --out " + dir.str() + "/o");
  CHECK(missing.exit_code == 4);
  // A file in the way of the output folder fails before the checkpoint is read.
  ltfit::testing::write_file(dir.path() / "taken", "x");
  const auto blocked =
      run_ltfit("interpret --checkpoint " + ckpt.string() + " --out " + dir.str() + "/taken/sub");
  CHECK(blocked.exit_code == 5);
  CHECK_THAT(blocked.output, Contains("taken"));
  CHECK_THAT(blocked.output, !Contains("evaluating"));
  // Text output: the tables, and the folder it wrote into.
  const auto text = run_ltfit("interpret --top 2 --no-tensorboard --out " + dir.str() +
                              "/plain --checkpoint " + ckpt.string());
  INFO(text.output);
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.stdout_text, Contains("top losses") && Contains("most confused"));
  CHECK(fs::exists(dir.path() / "plain/top_losses.png"));
}

TEST_CASE("interpret of a multi-label checkpoint shows each class's top losses",
          "[cli][interpret][multi_label]") {
  ltfit::testing::TempDir dir;
  const fs::path ckpt =
      train_tiny_interpret(dir, "", "--layout csv --task shapes",
                           ", layout: csv, csv: {valid_column: is_valid, label_delim: ' '}");
  const auto r = run_ltfit("interpret --json --top 3 --checkpoint " + ckpt.string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.stdout_text);
  const auto classes = j["evaluation"]["classes"];
  REQUIRE(j["top_losses"].size() == 3 * classes.size());  // 3 per class, class by class
  for (std::size_t i = 0; i < j["top_losses"].size(); ++i) {
    const auto& t = j["top_losses"][i];
    CHECK(t["class"] == classes[i / 3]);
    const double p = t["probability"].get<double>();
    const double expected = t["actual"] == 1 ? -std::log(p) : -std::log(1.0 - p);
    CHECK(t["loss"].get<double>() == Approx(expected).margin(1e-5));
  }
  CHECK(j["most_confused"].empty());
  const fs::path out = dir.path() / "runs/tiny/interpret";
  CHECK(!fs::exists(out / "most_confused.csv"));
  const cv::Mat png = cv::imread((out / "top_losses.png").string());
  REQUIRE(!png.empty());
  CHECK(png.rows >= static_cast<int>(classes.size()) * 160);  // a row per class
  CHECK(line_count(ltfit::testing::read_file(out / "top_losses.csv")) == 1 + 3 * classes.size());
}
