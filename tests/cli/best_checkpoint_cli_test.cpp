// best.ckpt after an interrupted checkpoint write (issue 40): the states a crash or a full disk
// leaves (best.ckpt missing, stale, or ahead of last.ckpt; no summary.json yet), made by hand,
// then `train --resume auto`: best.ckpt is there afterwards and holds the epoch and accuracy that
// summary.json names. Tiny runs: 32 px, 16 images, two epochs, CPU.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "ltfit/train/checkpoint.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::read_file;
using ltfit::testing::run_ltfit;
using ltfit::testing::TempDir;

namespace {

std::string two_epoch_config(const fs::path& root) {
  return "run: {name: best, seed: 5, deterministic: true}\n"
         "data: {root: " +
         root.string() +
         ", image_size: 32, batch_size: 8, workers: 1}\n"
         "model: {arch: resnet18, pretrained: none, head: linear}\n"
         "train: {recipe: one_cycle, epochs: 2, lr: 2.0e-3, device: cpu,\n"
         // The crashes below are made of a finished run's full checkpoints: kept, as asked.
         "        checkpoint: {every_minutes: 0, keep: 3, keep_resumable: true}}\n"
         "eval: {tta: false}\n";
}

// The numbered checkpoints of `run`, oldest first.
std::vector<fs::path> numbered(const fs::path& run) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(run / "checkpoints")) {
    if (entry.path().filename().string().rfind("step-", 0) == 0) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// `train --resume auto` ends with best.ckpt holding the best that summary.json and last.ckpt name.
// Returns its output.
std::string resume_and_check(const fs::path& run, bool last_rewritten = true) {
  const auto resumed = run_ltfit("train --resume auto --run-dir " + run.string());
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  const fs::path best = run / "checkpoints/best.ckpt";
  REQUIRE(fs::exists(best));
  const auto held = ltfit::read_checkpoint_meta(best.string());
  const auto last = ltfit::read_checkpoint_meta((run / "checkpoints/last.ckpt").string());
  const auto summary = nlohmann::json::parse(read_file(run / "summary.json"));
  CHECK(summary["best_accuracy"].get<double>() == held.accuracy);
  CHECK(last.best_accuracy == held.accuracy);
  // A resumed run that trains on rewrites last.ckpt with the repaired record; a finished one
  // has nothing to train, and its last.ckpt keeps the record it had.
  for (const auto& state : last.hook_states) {
    if (state.name == "best_checkpoint" && last_rewritten)
      CHECK(state.scalars.at("epoch") == held.epochs_done);
  }
  return resumed.output;
}

}  // namespace

TEST_CASE("train --resume auto repairs a best.ckpt left missing, stale or ahead by a crash",
          "[cli][resume][checkpoint]") {
  TempDir dir;
  REQUIRE(
      run_ltfit("synth --out " + (dir.path() / "data").string() + " --train 16 --valid 8 --seed 1")
          .exit_code == 0);
  ltfit::testing::write_file(dir.path() / "c.yaml", two_epoch_config(dir.path() / "data"));
  const fs::path run = dir.path() / "run";
  const auto trained = run_ltfit("train --config " + (dir.path() / "c.yaml").string() +
                                 " --run-dir " + run.string());
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);
  const std::vector<fs::path> steps = numbered(run);
  REQUIRE(steps.size() == 2);
  const fs::path best = run / "checkpoints/best.ckpt";

  SECTION("best.ckpt missing after epoch 1 (a full disk while it was written), epoch 2 not run") {
    fs::remove(best);
    fs::copy_file(steps[0], run / "checkpoints/last.ckpt", fs::copy_options::overwrite_existing);
    fs::remove(steps[1]);
    fs::remove(run / "summary.json");
    CHECK_THAT(resume_and_check(run), Contains("best.ckpt is missing") && Contains("rewrote it"));
  }
  SECTION("best.ckpt deleted from a finished run: the last epoch's weights become the best") {
    fs::remove(best);
    fs::remove(run / "summary.json");
    const std::string output = resume_and_check(run, /*last_rewritten=*/false);
    CHECK_THAT(output, Contains("best.ckpt is missing"));
  }
  SECTION("best.ckpt stale: epoch 1's full checkpoint in its place (a kill while it was written)") {
    fs::copy_file(steps[0], best, fs::copy_options::overwrite_existing);
    fs::remove(run / "summary.json");
    resume_and_check(run);
  }
  SECTION("best.ckpt ahead: epoch 2's written, its numbered checkpoint not") {
    fs::copy_file(steps[1], best, fs::copy_options::overwrite_existing);  // epoch 2's
    fs::copy_file(steps[0], run / "checkpoints/last.ckpt", fs::copy_options::overwrite_existing);
    fs::remove(steps[1]);
    fs::remove(run / "summary.json");
    resume_and_check(run);
  }
}
