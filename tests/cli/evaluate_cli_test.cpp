// `ltfit evaluate` and `ltfit predict` with test-time augmentation, end to end on a tiny
// trained checkpoint: JSON figures, per-class metrics, predictions.csv, exit codes.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::run_ltfit;

namespace {

// Trains a seconds-long CPU run on a generated set under `dir`; returns its last checkpoint.
fs::path train_tiny_evaluate(const ltfit::testing::TempDir& dir) {
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/data --train 16 --valid 8 --seed 4").exit_code ==
          0);
  const fs::path config = dir.path() / "c.yaml";
  ltfit::testing::write_file(
      config, "run: {name: tiny, out_dir: " + dir.str() + "/runs, seed: 5}\n" +
                  "data: {root: " + dir.str() + "/data, image_size: 32, batch_size: 4, " +
                  "workers: 2}\n" + "model: {arch: resnet18, pretrained: none, head: linear}\n" +
                  "train: {recipe: one_cycle, epochs: 1, lr: 2.0e-3, device: cpu}\n" +
                  "eval: {tta: false, tta_mode: v1}\n");
  const auto trained = run_ltfit("train --config " + config.string());
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);
  // The images per class of each split, so that an imbalance shows at once.
  CHECK_THAT(trained.output, Contains("train: 16 images (cat 8, dog 8)") &&
                                 Contains("valid: 8 images (cat 4, dog 4)"));
  return dir.path() / "runs/tiny/checkpoints/last.ckpt";
}

std::vector<std::vector<std::string>> read_csv_rows(const fs::path& path) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream text(ltfit::testing::read_file(path));
  for (std::string line; std::getline(text, line);) {
    rows.emplace_back();
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) rows.back().push_back(cell);
  }
  return rows;
}

void check_per_class(const nlohmann::json& per_class) {
  REQUIRE(per_class.size() == 2);
  CHECK(per_class[0]["class"] == "cat");
  CHECK(per_class[1]["class"] == "dog");
  std::int64_t support = 0;
  for (const auto& c : per_class) {
    for (const char* key : {"precision", "recall", "f1"}) {
      CHECK(c[key].get<double>() >= 0.0);
      CHECK(c[key].get<double>() <= 1.0);
    }
    support += c["support"].get<std::int64_t>();
  }
  CHECK(support == 8);
}

double top_sum(const nlohmann::json& top) {
  double total = 0;
  for (const auto& t : top) total += t["probability"].get<double>();
  return total;
}

}  // namespace

TEST_CASE("evaluate --tta reports TTA figures and writes predictions.csv", "[cli][tta]") {
  ltfit::testing::TempDir dir;
  const fs::path ckpt = train_tiny_evaluate(dir);
  const auto r = run_ltfit("evaluate --tta --json --checkpoint " + ckpt.string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.stdout_text);  // stdout holds nothing but the JSON
  CHECK(j["images"] == 8);
  CHECK(j["tta_mode"] == "v1");
  CHECK(j["tta_views"] == 8);
  CHECK(j["tta_beta"].get<double>() == Approx(0.4));
  CHECK(j["tta_accuracy"].get<double>() >= 0.0);
  CHECK(j["tta_accuracy"].get<double>() <= 1.0);
  CHECK(j["tta_error_rate"].get<double>() == Approx(1.0 - j["tta_accuracy"].get<double>()));
  CHECK(j["tta_seconds"].get<double>() > 0.0);
  CHECK(j["error_rate"].get<double>() == Approx(1.0 - j["accuracy"].get<double>()));
  check_per_class(j["per_class"]);
  check_per_class(j["tta_per_class"]);

  const fs::path csv = dir.path() / "runs/tiny/predictions.csv";  // the run directory
  CHECK(j["predictions_csv"] == csv.string());
  const auto rows = read_csv_rows(csv);
  REQUIRE(rows.size() == 1 + 8);
  CHECK(rows[0] == std::vector<std::string>{"path", "label", "predicted", "loss", "prob_cat",
                                            "prob_dog", "plain_prob_cat", "plain_prob_dog"});
  double loss_sum = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    INFO("row " << i);
    REQUIRE(rows[i].size() == 8);
    CHECK(fs::exists(rows[i][0]));
    const double cat = std::stod(rows[i][4]), dog = std::stod(rows[i][5]);
    CHECK(cat + dog == Approx(1.0).epsilon(1e-4));
    CHECK(std::stod(rows[i][6]) + std::stod(rows[i][7]) == Approx(1.0).epsilon(1e-4));
    CHECK(rows[i][2] == (cat >= dog ? "cat" : "dog"));
    // The image's cross-entropy of the reported (TTA) probabilities.
    const double p_label = rows[i][1] == "cat" ? cat : dog;
    CHECK(std::stod(rows[i][3]) == Approx(-std::log(p_label)).epsilon(1e-4));
    loss_sum += std::stod(rows[i][3]);
  }
  CHECK(loss_sum / 8 == Approx(j["tta_loss"].get<double>()).epsilon(1e-4));
  // The confusion matrix as a picture beside it, and the images per class in the log.
  const std::string png = ltfit::testing::read_file(dir.path() / "runs/tiny/confusion_matrix.png");
  CHECK(png.substr(0, 8) == "\x89PNG\r\n\x1a\n");
  CHECK_THAT(r.output, Contains("valid: 8 images (cat 4, dog 4)"));
}

TEST_CASE("evaluate options: v2 override, precision, --out, plain csv, bad input", "[cli][tta]") {
  ltfit::testing::TempDir dir;
  const fs::path ckpt = train_tiny_evaluate(dir);
  const std::string base = "evaluate --json --checkpoint " + ckpt.string();
  auto r = run_ltfit(base + " --tta --tta-mode v2 --precision bf16 --out " + dir.str() + "/o");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.stdout_text);
  CHECK(j["tta_mode"] == "v2");
  CHECK(j["tta_views"] == 4);
  CHECK(j["tta_beta"].get<double>() == Approx(0.25));  // v2's fastai default
  CHECK(j["precision"] == "bf16");
  CHECK(read_csv_rows(dir.path() / "o/predictions.csv").size() == 1 + 8);

  r = run_ltfit(base + " --precision fp16 --out " + dir.str() + "/p");
  REQUIRE(r.exit_code == 0);
  j = nlohmann::json::parse(r.stdout_text);
  CHECK(j["precision"] == "fp32");  // no fp16 on a CPU
  CHECK_THAT(r.output, Contains("fp16"));
  CHECK_FALSE(j.contains("tta_accuracy"));
  const auto rows = read_csv_rows(dir.path() / "p/predictions.csv");
  CHECK(rows[0] ==
        std::vector<std::string>{"path", "label", "predicted", "loss", "prob_cat", "prob_dog"});
  double loss_sum = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) loss_sum += std::stod(rows[i][3]);
  CHECK(loss_sum / 8 == Approx(j["loss"].get<double>()).epsilon(1e-4));  // the plain loss
  CHECK(fs::exists(dir.path() / "p/confusion_matrix.png"));

  CHECK(run_ltfit(base + " --tta --tta-mode v9").exit_code == 2);
  r = run_ltfit(base + " --precision fp64");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("--precision: expected one of fp32, fp16, bf16, got 'fp64'"));
  CHECK(run_ltfit("evaluate --checkpoint " + dir.str() + "/missing.ckpt").exit_code == 4);
  ltfit::testing::write_file(dir.path() / "junk.ckpt", "not a checkpoint");
  CHECK(run_ltfit("evaluate --tta --checkpoint " + dir.str() + "/junk.ckpt").exit_code == 4);
}

TEST_CASE("predict --tta gives TTA and plain probabilities per image", "[cli][tta]") {
  ltfit::testing::TempDir dir;
  const fs::path ckpt = train_tiny_evaluate(dir);
  const std::string images = (dir.path() / "data/valid/dog/00000.jpg").string() + " " +
                             (dir.path() / "data/valid/cat/00000.jpg").string();
  ltfit::testing::write_file(dir.path() / "bad.jpg", "not an image");
  const auto r = run_ltfit("predict --tta --json --checkpoint " + ckpt.string() + " " + images +
                           " " + dir.str() + "/bad.jpg");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  nlohmann::json j = nlohmann::json::array();  // JSON Lines: one object per image, in order
  std::istringstream lines(r.stdout_text);
  for (std::string line; std::getline(lines, line);) j.push_back(nlohmann::json::parse(line));
  REQUIRE(j.size() == 3);
  for (int i = 0; i < 2; ++i) {
    CHECK(j[i]["tta"] == "v1");
    CHECK(top_sum(j[i]["top"]) == Approx(1.0).epsilon(1e-4));
    CHECK(top_sum(j[i]["plain_top"]) == Approx(1.0).epsilon(1e-4));
  }
  CHECK(j[0]["image"].get<std::string>().find("dog") != std::string::npos);
  CHECK(j[2].contains("error"));
  const auto text =
      run_ltfit("predict --tta --tta-mode v2 --checkpoint " + ckpt.string() + " " + images);
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.stdout_text, Contains("(TTA v2)"));
  CHECK(run_ltfit("predict --tta --checkpoint " + dir.str() + "/none.ckpt " + images).exit_code ==
        4);
}
