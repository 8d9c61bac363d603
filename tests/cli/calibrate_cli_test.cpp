// `ltfit calibrate` end to end on tiny trained checkpoints: the calibrated copy it writes, the
// figures `evaluate` then reports on it (the NLL and ECE calibrate printed), `predict`'s
// probabilities at the temperature, the multi-label thresholds it moves, and its exit codes.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "jobs/jobs_fixtures.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::run_ltfit;

namespace {

// A seconds-long CPU training run on a generated set under `dir`; returns its last checkpoint.
// `data_yaml` completes the data section, `extra` is appended to the config.
fs::path train_tiny_calibrate(const ltfit::testing::TempDir& dir, const std::string& synth,
                              const std::string& data_yaml, const std::string& extra = "") {
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/data --train 16 --valid 12 --seed 4 " + synth)
              .exit_code == 0);
  const fs::path config = dir.path() / "c.yaml";
  ltfit::testing::write_file(
      config, "run: {name: tiny, out_dir: " + dir.str() + "/runs, seed: 5}\n" + "data: {root: " +
                  dir.str() + "/data, image_size: 32, batch_size: 4, " + "workers: 2" + data_yaml +
                  "}\n" + "model: {arch: resnet18, pretrained: none, head: linear}\n" +
                  "train: {recipe: one_cycle, epochs: 1, lr: 2.0e-3, device: cpu}\n" +
                  "eval: {tta: false" + extra + "}\n");
  const auto trained = run_ltfit("train --config " + config.string());
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);
  return dir.path() / "runs/tiny/checkpoints/last.ckpt";
}

std::string stdout_of(const ltfit::testing::CommandResult& r) {
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return r.stdout_text;
}

nlohmann::json json_of(const ltfit::testing::CommandResult& r) {
  return nlohmann::json::parse(stdout_of(r));
}

// predict --json --logits lines: each image's raw logits and top-class probability.
std::vector<std::pair<std::vector<double>, double>> predictions(const std::string& output) {
  std::vector<std::pair<std::vector<double>, double>> out;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    out.emplace_back(j["logits"].get<std::vector<double>>(),
                     j["top"][0]["probability"].get<double>());
  }
  return out;
}

// The last row's valid_loss of a run directory's epochs.csv.
double last_valid_loss(const fs::path& run) {
  std::istringstream text(ltfit::testing::read_file(run / "epochs.csv"));
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(text, line);) {
    rows.emplace_back();
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) rows.back().push_back(cell);
  }
  REQUIRE(rows.size() >= 2);
  const auto column = std::find(rows[0].begin(), rows[0].end(), "valid_loss") - rows[0].begin();
  return std::stod(rows.back().at(static_cast<std::size_t>(column)));
}

// The largest softmax probability of logits / t.
double top_softmax(const std::vector<double>& logits, double t) {
  double best = -1e300, sum = 0;
  for (const double z : logits) best = std::max(best, z / t);
  for (const double z : logits) sum += std::exp(z / t - best);
  return 1.0 / sum;
}

}  // namespace

TEST_CASE("calibrate writes a calibrated checkpoint that evaluate and predict apply",
          "[cli][calibrate]") {
  ltfit::testing::TempDir dir;
  const fs::path ckpt = train_tiny_calibrate(dir, "", "");
  const auto c = json_of(run_ltfit("calibrate --json --device cpu --checkpoint " + ckpt.string()));
  const fs::path calibrated = dir.path() / "runs/tiny/checkpoints/last-calibrated.ckpt";
  CHECK(c["calibrated_checkpoint"] == calibrated.string());
  REQUIRE(fs::exists(calibrated));
  CHECK(c["images"] == 12);
  CHECK(c["split"] == "valid");
  const double t = c["temperature"].get<double>();
  CHECK(t > 0.0);
  CHECK(c["before"]["temperature"].get<double>() == 1.0);
  CHECK(c["after"]["temperature"].get<double>() == t);
  const double nll_before = c["before"]["nll"].get<double>();
  const double nll_after = c["after"]["nll"].get<double>();
  CHECK(nll_after <= nll_before + 1e-9);  // T = 1 was a candidate
  INFO("calibrate: T " << t << ", NLL " << nll_before << " -> " << nll_after << ", ECE "
                       << c["before"]["ece"] << " -> " << c["after"]["ece"]);

  // evaluate on the original reports the "before" figures, on the copy the "after" ones.
  const auto before = json_of(
      run_ltfit("evaluate --json --checkpoint " + ckpt.string() + " --out " + dir.str() + "/e0"));
  CHECK(before["temperature"].get<double>() == 1.0);
  CHECK(before["nll"].get<double>() == Approx(nll_before).margin(1e-6));
  CHECK(before["ece"].get<double>() == Approx(c["before"]["ece"].get<double>()).margin(1e-6));
  const auto after = json_of(run_ltfit("evaluate --json --checkpoint " + calibrated.string() +
                                       " --out " + dir.str() + "/e1"));
  CHECK(after["temperature"].get<double>() == t);
  CHECK(after["nll"].get<double>() == Approx(nll_after).margin(1e-5));
  CHECK(after["nll"].get<double>() == Approx(after["loss"].get<double>()));
  CHECK(after["ece"].get<double>() == Approx(c["after"]["ece"].get<double>()).margin(1e-6));
  CHECK(after["accuracy"] == before["accuracy"]);
  CHECK(after["reliability"].size() == 15);
  CHECK(after["reliability_png"] == dir.str() + "/e1/reliability.png");
  const std::string png = ltfit::testing::read_file(dir.path() / "e1/reliability.png");
  CHECK(png.substr(0, 8) == "\x89PNG\r\n\x1a\n");

  // predict: the same raw logits, probabilities of logits / T.
  const std::string images = " " + dir.str() + "/data/valid";
  const auto raw = predictions(
      stdout_of(run_ltfit("predict --json --logits --checkpoint " + ckpt.string() + images)));
  const auto cal = predictions(
      stdout_of(run_ltfit("predict --json --logits --checkpoint " + calibrated.string() + images)));
  REQUIRE(raw.size() == 12);
  REQUIRE(cal.size() == raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    CHECK(cal[i].first == raw[i].first);
    CHECK(raw[i].second == Approx(top_softmax(raw[i].first, 1.0)).margin(1e-5));
    CHECK(cal[i].second == Approx(top_softmax(raw[i].first, t)).margin(1e-5));
  }

  // predict --tta: its plain pass at the temperature too.
  std::istringstream tta(
      stdout_of(run_ltfit("predict --json --tta --checkpoint " + calibrated.string() + images)));
  std::string first;
  REQUIRE(std::getline(tta, first));
  const auto plain_top = nlohmann::json::parse(first)["plain_top"][0]["probability"];
  CHECK(plain_top.get<double>() == Approx(top_softmax(raw[0].first, t)).margin(1e-5));

  // Calibrating the copy fits the raw logits again: the same T, stated relative to the old one.
  const auto again = json_of(run_ltfit("calibrate --json --checkpoint " + calibrated.string() +
                                       " --out " + dir.str() + "/again.ckpt"));
  CHECK(again["before"]["temperature"].get<double>() == t);
  CHECK(again["temperature"].get<double>() == Approx(t).epsilon(1e-6));
  CHECK(again["before"]["nll"].get<double>() == Approx(nll_after).margin(1e-5));
}

TEST_CASE("calibrate on a multi-label checkpoint moves its threshold and keeps its label sets",
          "[cli][calibrate][multi_label]") {
  ltfit::testing::TempDir dir;
  const fs::path ckpt =
      train_tiny_calibrate(dir, "--layout csv --task shapes",
                           ", layout: csv, csv: {valid_column: is_valid, label_delim: ' '}",
                           ", threshold: 0.3, temperature: 1.5");
  const auto r = run_ltfit("calibrate --checkpoint " + ckpt.string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.stdout_text, Contains("before") && Contains("after") && Contains("temperature"));
  const auto c = json_of(run_ltfit("calibrate --json --checkpoint " + ckpt.string()));
  CHECK(c["task"] == "multi_label");
  const double t = c["temperature"].get<double>();
  // The config's eval.temperature applied to training's validation too: its last valid_loss is
  // the NLL calibrate measured before fitting (at 1.5).
  CHECK(c["before"]["temperature"].get<double>() == 1.5);
  CHECK(c["before"]["nll"].get<double>() ==
        Approx(last_valid_loss(dir.path() / "runs/tiny")).margin(1e-5));
  CHECK(c["after"]["nll"].get<double>() <= c["before"]["nll"].get<double>() + 1e-9);
  // Every class's threshold moved to the same logit: sigmoid(logit(0.3) * 1.5 / t).
  const double moved = 1.0 / (1.0 + std::exp(-std::log(0.3 / 0.7) * 1.5 / t));
  REQUIRE(c["thresholds"].size() == 4);
  for (const auto& threshold : c["thresholds"]) CHECK(threshold.get<double>() == Approx(moved));
  const std::string calibrated = c["calibrated_checkpoint"].get<std::string>();
  // predict says which threshold each class's probability was compared with.
  const std::string predicted =
      stdout_of(run_ltfit("predict --json --checkpoint " + calibrated + " " + dir.str() + "/data"));
  std::istringstream lines(predicted);
  int predictions = 0;
  for (std::string line; std::getline(lines, line); ++predictions) {
    const auto j = nlohmann::json::parse(line);
    for (const auto& entry : j["top"]) CHECK(entry["threshold"].get<double>() == Approx(moved));
    for (const auto& label : j["labels"]) CHECK(label["probability"] > label["threshold"]);
  }
  CHECK(predictions == 16 + 12);
  CHECK_THAT(stdout_of(run_ltfit("predict --checkpoint " + calibrated + " " + dir.str() + "/data")),
             Contains("threshold 0.") && Contains("labels (each class whose probability is above"));
  const auto before = json_of(
      run_ltfit("evaluate --json --checkpoint " + ckpt.string() + " --out " + dir.str() + "/e0"));
  const auto after = json_of(
      run_ltfit("evaluate --json --checkpoint " + calibrated + " --out " + dir.str() + "/e1"));
  CHECK(after["temperature"].get<double>() == t);
  CHECK(after["nll"].get<double>() == Approx(c["after"]["nll"].get<double>()).margin(1e-5));
  CHECK(after["ece"].get<double>() == Approx(c["after"]["ece"].get<double>()).margin(1e-6));
  CHECK(after["accuracy_multi"] == before["accuracy_multi"]);
  CHECK(after["f1_macro"] == before["f1_macro"]);
  // The predicted label sets, image by image, are the same.
  std::istringstream a(ltfit::testing::read_file(dir.path() / "e0/predictions.csv"));
  std::istringstream b(ltfit::testing::read_file(dir.path() / "e1/predictions.csv"));
  int rows = 0;
  for (std::string la, lb; std::getline(a, la) && std::getline(b, lb); ++rows) {
    const auto fields = [](const std::string& line) {
      return line.substr(0, line.find(',', line.find(',', line.find(',') + 1) + 1));
    };
    CHECK(fields(la) == fields(lb));  // path, labels, predicted
  }
  CHECK(rows == 1 + 12);
}

TEST_CASE("calibrate's bad arguments exit 2, 4 and 5 before anything is evaluated",
          "[cli][calibrate]") {
  ltfit::testing::TempDir dir;
  CHECK(run_ltfit("calibrate --checkpoint " + dir.str() + "/none.ckpt").exit_code == 4);
  const fs::path text = dir.path() / "text.ckpt";
  ltfit::testing::write_file(text, "not a checkpoint");
  CHECK(run_ltfit("calibrate --checkpoint " + text.string()).exit_code == 4);
  const fs::path config = dir.path() / "c.yaml";
  ltfit::testing::write_file(config, "run: {name: t, out_dir: " + dir.str() + "/runs}\n" +
                                         "data: {root: " + dir.str() + "/data, image_size: 32}\n" +
                                         "model: {arch: resnet18, pretrained: none}\n");
  // eval.temperature must be finite and above 0: the config is refused naming the key.
  for (const char* bad : {"0", "-2", ".nan"}) {
    const auto r =
        run_ltfit("train --config " + config.string() + " --set eval.temperature=" + bad);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Contains("eval.temperature"));
  }
  // A checkpoint (untrained weights) for the output checks.
  const std::string ckpt = dir.str() + "/runs/t/checkpoints/last.ckpt";
  ltfit::testing::write_job_checkpoint(
      ckpt, ltfit::testing::tiny_job_config(dir.path() / "data", dir.path() / "runs"));
  auto r = run_ltfit("calibrate --checkpoint " + ckpt + " --out /proc/nope/c.ckpt");
  CHECK(r.exit_code == 5);
  CHECK_THAT(r.output, Contains("/proc/nope") && Contains("calibrated checkpoint (--out)"));
  CHECK_THAT(r.output, !Contains("evaluating"));
  fs::create_directories(dir.path() / "folder.ckpt");
  CHECK(run_ltfit("calibrate --checkpoint " + ckpt + " --out " + dir.str() + "/folder.ckpt")
            .exit_code == 5);
  r = run_ltfit("calibrate --checkpoint " + ckpt + " --out " + ckpt);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("is the checkpoint being calibrated"));
  CHECK(run_ltfit("calibrate --checkpoint " + ckpt + " --split nope").exit_code == 2);
  CHECK(run_ltfit("calibrate --checkpoint " + ckpt + " --precision fp8").exit_code == 2);
  CHECK_FALSE(fs::exists(dir.path() / "runs/t/checkpoints/last-calibrated.ckpt"));
}
