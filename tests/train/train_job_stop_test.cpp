// When a stop request (SIGINT/SIGTERM, train.time_limit) makes a run "interrupted" (exit 130)
// and when it comes too late to cut anything short (train_job.h): a request seen after the last
// epoch's checkpoint leaves a complete run (summary.json, no InterruptedError); one seen at the
// last training step still interrupts. The request is simulated by counting the trainer's polls.
#include <catch2/catch.hpp>

#include <filesystem>

#include "ltfit/config/config_loader.h"
#include "ltfit/jobs/train_job.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using ltfit::testing::TempDir;

namespace {

// fine_tune, 1 frozen + 1 unfrozen epoch, 2 steps each: the trainer polls for a stop after
// every step and after every epoch's checkpoint, 3 polls an epoch, 6 in all.
ltfit::Config stop_config(const fs::path& data) {
  return ltfit::load_config_from_string(
      "run: {name: s, seed: 3}\n"
      "data: {root: " +
          data.string() +
          ", image_size: 32, batch_size: 8, workers: 2}\n"
          "model: {arch: resnet18, pretrained: none, head: linear}\n"
          "train: {recipe: fine_tune, freeze_epochs: 1, epochs: 1, lr: 2.0e-3, device: cpu,\n"
          "        checkpoint: {every_minutes: 0, keep: 2}}\n"
          "eval: {tta: false}\n",
      "stop_test.yaml");
}

constexpr int kPollsInRun = 6;

}  // namespace

TEST_CASE("a stop requested after the last epoch's checkpoint leaves a complete run",
          "[train][resume]") {
  TempDir dir;
  ltfit::testing::write_small_synth(dir.path() / "data", 16, 8, 40, 60, /*seed=*/4);
  const ltfit::Config config = stop_config(dir.path() / "data");

  SECTION("requested during the last validation (seen at the poll after its checkpoint)") {
    ltfit::TrainJobOptions options;
    options.run_dir = (dir.path() / "late").string();
    int polls = 0;
    options.stop_signal = [&] { return ++polls >= kPollsInRun; };
    const ltfit::RunSummary summary = ltfit::run_train_job(config, options);
    CHECK(polls >= kPollsInRun);  // the request was seen, and did not interrupt
    CHECK(summary.epochs == 2);
    CHECK(fs::exists(dir.path() / "late/summary.json"));
  }
  SECTION("requested during the last training step: interrupted, summary not written") {
    ltfit::TrainJobOptions options;
    options.run_dir = (dir.path() / "cut").string();
    int polls = 0;
    options.stop_signal = [&] { return ++polls >= kPollsInRun - 1; };
    CHECK_THROWS_AS(ltfit::run_train_job(config, options), ltfit::InterruptedError);
    CHECK_FALSE(fs::exists(dir.path() / "cut/summary.json"));
    CHECK(fs::exists(dir.path() / "cut/checkpoints/last.ckpt"));
  }
}
