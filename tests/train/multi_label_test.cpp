// Multi-label training end to end on a CSV dataset (label sets in one cell, a validation column):
// the binary cross-entropy loss and its pos_weight, the run directory's extra figures
// (epochs.csv, summary.json, split.csv), evaluation with its per-class figures, threshold tuning
// into a new checkpoint, and exact resume with MixUp and EMA on (CPU, run.deterministic).
#include <torch/torch.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ltfit/config/config_loader.h"
#include "ltfit/eval/evaluator.h"
#include "ltfit/jobs/evaluate_job.h"
#include "ltfit/jobs/train_job.h"
#include "ltfit/model/model_factory.h"
#include "ltfit/train/checkpoint.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using ltfit::testing::TempDir;

namespace {

const std::vector<std::string> kLabels = {"red", "round", "tall"};

// A CSV multi-label set over small synthetic images: each image's label set from its index
// (every subset of the three labels occurs, the empty one too), the valid/ images marked in
// an is_valid column.
fs::path write_multi_label_set(const fs::path& root) {
  ltfit::testing::write_small_synth(root, 24, 8, 40, 60, /*seed=*/5);
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file() && e.path().extension() == ".jpg") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::string csv = "fname,tags,is_valid\n";
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::string tags;
    for (std::size_t k = 0; k < kLabels.size(); ++k) {
      if (((i * 5 + 3) >> k) & 1U) tags += (tags.empty() ? "" : " ") + kLabels[k];
    }
    const std::string rel = fs::relative(files[i], root).string();
    csv += rel + "," + tags + "," + (rel.rfind("valid/", 0) == 0 ? "1" : "0") + "\n";
  }
  ltfit::testing::write_file(root / "labels.csv", csv);
  return root;
}

ltfit::Config multi_label_config(const fs::path& data, const std::string& extra = "") {
  return ltfit::load_config_from_string(
      "run: {name: ml, seed: 3, deterministic: true}\n"
      "data: {root: " +
          data.string() +
          ", layout: csv, image_size: 32, batch_size: 8, workers: 2,\n"
          "       csv: {file: labels.csv, path_column: fname, label_column: tags,\n"
          "             valid_column: is_valid, label_delim: ' '}}\n"
          "model: {arch: resnet18, pretrained: none, head: fastai}\n"
          "train: {recipe: fine_tune, freeze_epochs: 1, epochs: 1, lr: 2.0e-3, device: cpu,\n"
          "        checkpoint: {every_minutes: 0, keep: 2}" +
          extra +
          "}\n"
          "eval: {tta: false}\n",
      "multi_label_test.yaml");
}

std::vector<std::string> ml_lines_of(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

torch::Tensor flat_weights(const fs::path& checkpoint) {
  ltfit::ModelConfig model;
  model.arch = "resnet18";
  model.pretrained = {ltfit::PretrainedWeights::Kind::kNone, ""};
  ltfit::Classifier m = ltfit::build_model(model, 3);
  ltfit::load_checkpoint(checkpoint.string(), m, nullptr);
  std::vector<torch::Tensor> parts;
  for (const auto& p : m->parameters()) parts.push_back(p.detach().flatten());
  return torch::cat(parts);
}

}  // namespace

TEST_CASE("a CSV multi-label run trains with BCE and reports its figures", "[train][multi_label]") {
  TempDir dir;
  const fs::path data = write_multi_label_set(dir.path() / "data");
  const ltfit::Config config = multi_label_config(data, ", pos_weight: balanced");
  REQUIRE(ltfit::is_multi_label(config));
  ltfit::TrainJobOptions options;
  options.run_dir = (dir.path() / "run").string();
  const ltfit::RunSummary summary = ltfit::run_train_job(config, options);
  CHECK(summary.multi_label);
  CHECK(summary.classes == kLabels);
  CHECK(summary.thresholds == std::vector<double>(3, 0.5));
  CHECK(summary.valid_images == 8);
  CHECK(summary.accuracy >= 0.0);
  CHECK(summary.accuracy <= 1.0);

  const auto epochs = ml_lines_of(dir.path() / "run" / "epochs.csv");
  REQUIRE(epochs.size() == 3);
  CHECK(epochs[0].find(",f1_samples,f1_macro,map") != std::string::npos);
  const auto json =
      nlohmann::json::parse(ltfit::testing::read_file(dir.path() / "run" / "summary.json"));
  CHECK(json["task"] == "multi_label");
  CHECK(json["map"].get<double>() > 0.0);
  const auto split = ml_lines_of(dir.path() / "run" / "split.csv");
  REQUIRE(split.size() == 33);
  CHECK(split[0] == "path,split,labels");

  // evaluate: the per-class figures; predictions.csv with the label sets.
  ltfit::EvaluateJobRequest request;
  request.eval.checkpoint = (dir.path() / "run" / "checkpoints" / "last.ckpt").string();
  request.eval.device = "cpu";
  request.out = (dir.path() / "eval").string();
  request.tune_thresholds = true;
  const ltfit::EvaluateJobResult result = ltfit::run_evaluate_job(request);
  const ltfit::EvalResult& plain = result.evaluation.plain;
  CHECK(plain.multi_label);
  CHECK(plain.count == 8);
  REQUIRE(plain.per_class.size() == 3);
  CHECK(plain.accuracy == Approx(summary.accuracy).margin(1e-6));
  const auto predictions = ml_lines_of(dir.path() / "eval" / "predictions.csv");
  REQUIRE(predictions.size() == 9);
  CHECK(predictions[0] == "path,labels,predicted,prob_red,prob_round,prob_tall");
  CHECK(result.confusion_png.empty());

  // --tune-thresholds: a new checkpoint holding them; no class's F1 gets worse.
  REQUIRE(result.tuned);
  REQUIRE(fs::exists(result.tuned_checkpoint));
  CHECK(fs::path(result.tuned_checkpoint).filename() == "last-tuned.ckpt");
  for (std::size_t k = 0; k < 3; ++k) {
    CHECK(result.tuned->per_class[k].f1 >= plain.per_class[k].f1 - 1e-12);
  }
  const ltfit::CheckpointMeta tuned = ltfit::read_checkpoint_meta(result.tuned_checkpoint);
  const ltfit::Config tuned_config = ltfit::load_config_from_string(tuned.config_yaml, "tuned");
  CHECK(tuned_config.eval.thresholds == result.tuned_thresholds);
  ltfit::EvaluateJobRequest again = request;
  again.eval.checkpoint = result.tuned_checkpoint;
  again.tune_thresholds = false;
  again.out = (dir.path() / "eval2").string();
  const ltfit::EvaluateJobResult second = ltfit::run_evaluate_job(again);
  CHECK(second.evaluation.plain.f1_macro == Approx(result.tuned->f1_macro).margin(1e-9));
}

TEST_CASE("the multi-label loss is BCE with logits, its pos_weight torch's",
          "[train][multi_label]") {
  const torch::Tensor logits = torch::tensor({{0.3, -1.2, 2.0}, {-0.4, 0.9, 0.1}});
  const torch::Tensor targets = torch::tensor({{1.0, 0.0, 1.0}, {0.0, 0.0, 1.0}});
  ltfit::EvalOptions options;
  options.thresholds = {0.5, 0.5, 0.5};
  // loss_sum / N is the mean over images and classes.
  const double mean = ltfit::batch_loss_sum(logits, targets, options) / 2.0;
  const torch::Tensor p = torch::sigmoid(logits);
  const double manual = -(targets * p.log() + (1 - targets) * (1 - p).log()).mean().item<double>();
  CHECK(mean == Approx(manual).epsilon(1e-6));
  CHECK(ltfit::probability_loss_sum(p, targets, options) / 2.0 == Approx(manual).epsilon(1e-6));
}

TEST_CASE("a multi-label run resumed mid-epoch ends like an uninterrupted one",
          "[train][multi_label][resume]") {
  TempDir dir;
  const fs::path data = write_multi_label_set(dir.path() / "data");
  const ltfit::Config config = multi_label_config(
      data, ", mixup: {mixup_alpha: 0.4}, ema: {decay: 0.9}, label_smoothing: 0.1");
  ltfit::TrainJobOptions whole;
  whole.run_dir = (dir.path() / "whole").string();
  const ltfit::RunSummary expected = ltfit::run_train_job(config, whole);

  ltfit::TrainJobOptions cut;
  cut.run_dir = (dir.path() / "cut").string();
  int polls = 0;
  cut.stop_signal = [&] { return ++polls >= 5; };  // 3 steps per epoch: mid-epoch 1
  CHECK_THROWS_AS(ltfit::run_train_job(config, cut), ltfit::InterruptedError);
  ltfit::TrainJobOptions resume;
  resume.resume = (dir.path() / "cut" / "checkpoints" / "last.ckpt").string();
  const ltfit::RunSummary resumed = ltfit::run_train_job(config, resume);
  CHECK(resumed.accuracy == expected.accuracy);
  CHECK(resumed.map == expected.map);
  CHECK(resumed.f1_macro == expected.f1_macro);
  CHECK(torch::equal(flat_weights(dir.path() / "whole" / "checkpoints" / "last.ckpt"),
                     flat_weights(dir.path() / "cut" / "checkpoints" / "last.ckpt")));
  CHECK(ltfit::testing::read_file(dir.path() / "whole" / "split.csv") ==
        ltfit::testing::read_file(dir.path() / "cut" / "split.csv"));
}

TEST_CASE("multi-label keys are refused where the task is single-label", "[config][multi_label]") {
  const std::string base =
      "data: {root: d}\nmodel: {arch: resnet18, pretrained: none}\ntrain: {device: cpu}\n";
  CHECK_THROWS_AS(ltfit::load_config_from_string(base + "train: {pos_weight: balanced}\n", "x"),
                  ltfit::ConfigError);
  CHECK_THROWS_WITH(ltfit::load_config_from_string(
                        "data: {root: d}\ntrain: {pos_weight: balanced, best_monitor: map}\n", "x"),
                    Catch::Contains("train.pos_weight"));
  CHECK_THROWS_WITH(
      ltfit::load_config_from_string("data: {root: d}\ntrain: {best_monitor: f1_macro}\n", "x"),
      Catch::Contains("train.best_monitor"));
  const ltfit::Config ok = ltfit::load_config_from_string(
      "data: {root: d, csv: {label_delim: ' '}}\ntrain: {pos_weight: [1, 2], best_monitor: map}\n"
      "eval: {thresholds: [0.3, 0.6]}\n",
      "x");
  CHECK(ltfit::is_multi_label(ok));
  CHECK_THROWS_WITH(
      ltfit::load_config_from_string(
          "data: {root: d, csv: {label_delim: ' '}}\ntrain: {class_weights: balanced}\n", "x"),
      Catch::Contains("train.class_weights"));
  CHECK_THROWS_WITH(ltfit::load_config_from_string("data: {root: d, valid_pct: 1.5}\n", "x"),
                    Catch::Contains("data.valid_pct"));
  CHECK_THROWS_WITH(ltfit::load_config_from_string("data: {root: d, label_pattern: '[a'}\n", "x"),
                    Catch::Contains("data.label_pattern"));
  CHECK_THROWS_WITH(ltfit::load_config_from_string("data: {root: d, label_pattern: 'abc'}\n", "x"),
                    Catch::Contains("data.label_pattern"));
  CHECK_THROWS_WITH(ltfit::load_config_from_string("data: {root: d, csv: {folder: ../up}}\n", "x"),
                    Catch::Contains("data.csv.folder"));
  // Written back and read again, the keys keep their values.
  const ltfit::Config back = ltfit::load_config_from_string(ltfit::to_yaml(ok), "x");
  CHECK(back == ok);
}
