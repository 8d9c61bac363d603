// Interrupting `ltfit train` for real: SIGINT in a child process (checkpoint, exit 130, resume
// to the uninterrupted result) and kill -9 at random moments while checkpoints are being written
// (the last checkpoint always loads; a truncated one is refused with exit 4).
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "ltfit/train/checkpoint.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::run_bash;
using ltfit::testing::run_ltfit;
using ltfit::testing::TempDir;

namespace {

// ~40 steps of a few hundred ms on two cores: long enough to be interrupted mid-run.
std::string slow_config(const fs::path& root, double every_minutes) {
  return "run: {name: slow, seed: 5, deterministic: true}\n"
         "data: {root: " +
         root.string() +
         ", image_size: 64, batch_size: 16, workers: 2}\n"
         "model: {arch: resnet18, pretrained: none, head: fastai}\n"
         "train: {recipe: one_cycle, epochs: 8, lr: 2.0e-3, device: cpu,\n"
         "        checkpoint: {every_minutes: " +
         std::to_string(every_minutes) +
         ", keep: 2}}\n"
         "eval: {tta: false}\n";
}

// Writes a synthetic set under `dir`/data and a slow_config for it; returns the config path.
fs::path write_slow_run(const fs::path& dir, double every_minutes) {
  REQUIRE(run_ltfit("synth --out " + (dir / "data").string() + " --train 80 --valid 16 --seed 2")
              .exit_code == 0);
  const fs::path config = dir / "c.yaml";
  ltfit::testing::write_file(config, slow_config(dir / "data", every_minutes));
  return config;
}

// Starts training in the background, waits until `run/steps.csv` has more than `rows` lines,
// sends `signal` and prints the exit status.
std::string interrupt_script(const std::string& train_args, const fs::path& run, int rows,
                             const std::string& signal) {
  return std::string(LTFIT_BINARY) + " " + train_args + " >" + run.string() + ".out 2>&1 &\n" +
         "pid=$!\n"
         "for i in $(seq 1 600); do\n"
         "  n=$(wc -l < " +
         (run / "steps.csv").string() + " 2>/dev/null || echo 0)\n" + "  [ \"$n\" -gt " +
         std::to_string(rows) + " ] && break\n" +
         "  kill -0 $pid 2>/dev/null || break\n"
         "  sleep 0.05\n"
         "done\n"
         "kill -" +
         signal +
         " $pid\n"
         "wait $pid\n"
         "echo $?\n";
}

}  // namespace

TEST_CASE("SIGINT: finish the step, checkpoint, exit 130 - --resume auto ends as if never stopped",
          "[cli][resume]") {
  TempDir dir;
  const fs::path config = write_slow_run(dir.path(), /*every_minutes=*/0);
  const fs::path run = dir.path() / "cut";
  const std::string status = run_bash(
      dir.path(),
      interrupt_script("train --config " + config.string() + " --run-dir " + run.string(), run,
                       /*rows=*/6, "INT"));
  CHECK(std::stoi(status) == 130);
  const std::string log = ltfit::testing::read_file(run.string() + ".out");
  CHECK_THAT(log, Contains("stop requested") && Contains("--resume auto"));
  const auto meta = ltfit::read_checkpoint_meta((run / "checkpoints/last.ckpt").string());
  CHECK(meta.global_step >= 6);
  CHECK(meta.global_step < 40);

  const auto resumed = run_ltfit("train --resume auto --run-dir " + run.string());
  REQUIRE(resumed.exit_code == 0);
  const auto whole = run_ltfit("train --config " + config.string() + " --run-dir " +
                               (dir.path() / "whole").string());
  REQUIRE(whole.exit_code == 0);
  // Same steps, losses and validation figures, row for row (timings aside).
  auto without_times = [](const fs::path& csv) {  // epoch,stage,losses,accuracy,error_rate
    std::ifstream in(csv);
    std::string out, line;
    while (std::getline(in, line)) {
      std::size_t cut = 0;
      for (int commas = 0; commas < 6 && cut != std::string::npos; ++commas)
        cut = line.find(',', cut + (commas > 0 ? 1 : 0));
      out += line.substr(0, cut) + "\n";
    }
    return out;
  };
  CHECK(ltfit::testing::read_file(run / "steps.csv") ==
        ltfit::testing::read_file(dir.path() / "whole" / "steps.csv"));
  CHECK(without_times(run / "epochs.csv") == without_times(dir.path() / "whole" / "epochs.csv"));
}

TEST_CASE("kill -9 at random moments while checkpointing never leaves an unloadable checkpoint",
          "[cli][resume]") {
  TempDir dir;
  const fs::path config = write_slow_run(dir.path(), /*every_minutes=*/1e-5);  // every step
  const fs::path run = dir.path() / "run";
  std::mt19937 rng(1234);
  std::int64_t previous_step = -1;
  for (int round = 0; round < 4; ++round) {
    INFO("round " << round);
    const int rows = 2 + static_cast<int>(rng() % 5) + 6 * round;
    const std::string args =
        round == 0 ? "train --config " + config.string() + " --run-dir " + run.string()
                   : "train --resume auto --run-dir " + run.string();
    const std::string status = run_bash(dir.path(), interrupt_script(args, run, rows, "KILL"));
    CHECK(std::stoi(status) == 137);  // killed, not a clean exit
    const std::string last = (run / "checkpoints/last.ckpt").string();
    REQUIRE(fs::exists(last));
    const auto meta = ltfit::read_checkpoint_meta(last);
    CHECK(meta.global_step >= previous_step);
    previous_step = meta.global_step;
    const auto evaluated = run_ltfit("evaluate --checkpoint " + last);
    CHECK(evaluated.exit_code == 0);
  }
  // A truncated checkpoint (what a kill mid-write would leave under the temporary name) is
  // refused, not loaded half-way.
  const std::string bytes = ltfit::testing::read_file(run / "checkpoints/last.ckpt");
  ltfit::testing::write_file(dir.path() / "torn.ckpt", bytes.substr(0, bytes.size() / 2));
  const auto torn = run_ltfit("evaluate --checkpoint " + (dir.path() / "torn.ckpt").string());
  CHECK(torn.exit_code == 4);
  // And the run still finishes from its last good checkpoint.
  CHECK(run_ltfit("train --resume auto --run-dir " + run.string()).exit_code == 0);
}
