// What a train run leaves behind when it fails or stops: the error and its hint in train.log, a
// failed.txt for a run that failed before its first step (whose folder the next run of the name
// takes instead of a numbered sibling), the stop's "continue with" line in train.log; and the
// words of the command line: a short config summary on the terminal, a did-you-mean for a
// misspelt command.
#include <catch2/catch.hpp>

#include <filesystem>

#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::read_file;
using ltfit::testing::run_ltfit;
using ltfit::testing::TempDir;
using ltfit::testing::write_file;

namespace {

// A seconds-long CPU run named "tiny" on `root`, under `out`, of `epochs` epochs; `train` adds
// train keys.
std::string tiny_failure_config(const fs::path& root, const fs::path& out, int epochs = 1,
                                const std::string& train = "") {
  return "run: {name: tiny, out_dir: " + out.string() +
         ", seed: 5}\n"
         "data: {root: " +
         root.string() +
         ", image_size: 32, batch_size: 8, workers: 2}\n"
         "model: {arch: resnet18, pretrained: none, head: linear}\n"
         "train: {recipe: one_cycle, epochs: " +
         std::to_string(epochs) + ", lr: 2.0e-3, device: cpu" + train + "}\neval: {tta: false}\n";
}

}  // namespace

TEST_CASE("a run that fails before its first step says why, and the next run takes its folder",
          "[cli][run_dir]") {
  TempDir dir;
  const fs::path config = dir.path() / "c.yaml";
  const fs::path runs = dir.path() / "runs";
  write_file(config, tiny_failure_config(dir.path() / "data", runs));

  for (int attempt = 0; attempt < 2; ++attempt) {  // the data is not there yet
    INFO("attempt " << attempt);
    const auto r = run_ltfit("train --config " + config.string());
    REQUIRE(r.exit_code == 3);
    REQUIRE(fs::exists(runs / "tiny"));
    CHECK_FALSE(fs::exists(runs / "tiny-2"));  // no pile of numbered failed runs
    const std::string failed = read_file(runs / "tiny" / "failed.txt");
    CHECK_THAT(failed, Contains("before its first training step") &&
                           Contains((dir.path() / "data").string()) && Contains("HINT: "));
    const std::string log = read_file(runs / "tiny" / "train.log");
    CHECK_THAT(
        log, Contains("error: ") && Contains((dir.path() / "data").string()) && Contains("HINT: "));
  }

  REQUIRE(run_ltfit("synth --out " + (dir.path() / "data").string() + " --train 16 --valid 8")
              .exit_code == 0);
  const auto good = run_ltfit("train --config " + config.string() + " --json");
  INFO(good.output);
  REQUIRE(good.exit_code == 0);
  CHECK_FALSE(fs::exists(runs / "tiny-2"));  // the failed run's folder was taken
  CHECK_FALSE(fs::exists(runs / "tiny" / "failed.txt"));
  CHECK(fs::exists(runs / "tiny" / "checkpoints" / "last.ckpt"));
  CHECK_THAT(read_file(runs / "tiny" / "train.log"), !Contains("error: "));

  // A run that holds checkpoints is never taken: the next one gets a numbered sibling.
  REQUIRE(run_ltfit("train --config " + config.string()).exit_code == 0);
  CHECK(fs::exists(runs / "tiny-2" / "checkpoints" / "last.ckpt"));
}

TEST_CASE("a stopped run's 'continue with' line is in train.log", "[cli][run_dir]") {
  TempDir dir;
  REQUIRE(run_ltfit("synth --out " + (dir.path() / "data").string() + " --train 64 --valid 8")
              .exit_code == 0);
  const fs::path config = dir.path() / "c.yaml";
  write_file(config, tiny_failure_config(dir.path() / "data", dir.path() / "runs", /*epochs=*/50,
                                         ", time_limit: 1s, checkpoint: {every_minutes: 0}"));
  const auto r = run_ltfit("train --config " + config.string());
  INFO(r.output);
  REQUIRE(r.exit_code == 130);
  const std::string log = read_file(dir.path() / "runs" / "tiny" / "train.log");
  const std::string run_dir = (dir.path() / "runs" / "tiny").string();
  // Exactly the command that continues it: a resumed run takes its config from the run
  // directory, so a --config in the hint would be ignored (and said to be).
  CHECK_THAT(log, Contains("continue with: ltfit train --resume auto --run-dir " + run_dir + "\n"));
  CHECK_FALSE(fs::exists(dir.path() / "runs" / "tiny" / "failed.txt"));  // a stop is no failure
}

TEST_CASE("train shows a short config summary, train.log and config.yaml hold every key",
          "[cli][run_dir]") {
  TempDir dir;
  REQUIRE(run_ltfit("synth --out " + (dir.path() / "data").string() + " --train 16 --valid 8")
              .exit_code == 0);
  const fs::path config = dir.path() / "c.yaml";
  write_file(config, tiny_failure_config(dir.path() / "data", dir.path() / "runs"));
  const auto r = run_ltfit("train --config " + config.string());
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("config: model resnet18 (pretrained none, linear head)") &&
                           Contains("config: train one_cycle (schedule one_cycle): 1 epoch(s)") &&
                           Contains("config: every key in"));
  CHECK_THAT(r.output, !Contains("max_lighting") && !Contains("resolved config"));
  const std::string log = read_file(dir.path() / "runs" / "tiny" / "train.log");
  CHECK_THAT(log, Contains("resolved config:") && Contains("max_lighting") &&
                      Contains("config: model resnet18"));
}

TEST_CASE("a misspelt command gets a did-you-mean and exit 2", "[cli]") {
  const auto r = run_ltfit("trian --config x.yaml");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("'trian' is not a command") && Contains("did you mean 'train'?") &&
                           Contains("lr-find"));
  const auto far = run_ltfit("zzzzzzzz");
  CHECK(far.exit_code == 2);
  CHECK_THAT(far.output, Contains("'zzzzzzzz' is not a command") && !Contains("did you mean"));
  CHECK(run_ltfit("--version").exit_code == 0);
  CHECK(run_ltfit("-v --help").exit_code == 0);
}
