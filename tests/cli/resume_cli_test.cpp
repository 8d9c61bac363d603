// `ltfit train --resume` and `--init-from` end to end (issue 21): a resume that would change the
// schedule exits 2 naming the keys; resuming a complete run changes nothing; best.ckpt (weights
// only) cannot be resumed but can be trained on with --init-from, in a new run directory, on data
// of the same classes only; a relative data.root is stored absolute, so evaluate works from any
// folder. Tiny runs: 32 px, 16 images, one epoch, CPU.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "support/child_cap.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::read_file;
using ltfit::testing::run_ltfit;
using ltfit::testing::TempDir;
using ltfit::testing::write_file;

namespace {

// The child's address space capped (none under ASan: child_cap.h), and a wall-clock bound.
const std::string kResumeLimits =
    ltfit::testing::child_address_space_cap(6000000ull * 1024) + " timeout -s KILL 120 ";

// A one-cycle run `tiny` of `epochs` epochs under `out`, reading `root` (relative to the folder
// ltfit runs in, or absolute).
std::string tiny_resume_config(const std::string& root, const fs::path& out, int epochs = 1) {
  return "run: {name: tiny, out_dir: \"" + out.string() + "\", seed: 5}\n" + "data: {root: \"" +
         root + "\", image_size: 32, batch_size: 8, workers: 2}\n" +
         "model: {arch: resnet18, pretrained: none, head: linear}\n" +
         "train: {recipe: one_cycle, epochs: " + std::to_string(epochs) +
         ", lr: 2.0e-3, device: cpu}\neval: {tta: false}\n";
}

// Trains `tiny` from `dir`/c.yaml, run from `dir` with data.root "data" (relative); returns its
// run directory.
fs::path train_tiny_relative(const fs::path& dir) {
  REQUIRE(run_ltfit("synth --out " + (dir / "data").string() + " --train 16 --valid 8 --seed 1")
              .exit_code == 0);
  write_file(dir / "c.yaml", tiny_resume_config("data", dir / "runs"));
  const auto trained =
      run_ltfit("train --config c.yaml", "cd " + dir.string() + " && " + kResumeLimits);
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);
  return dir / "runs/tiny";
}

}  // namespace

TEST_CASE("train --resume: a complete run changes nothing, a schedule change exits 2",
          "[cli][resume]") {
  TempDir dir;
  const fs::path run = train_tiny_relative(dir.path());
  const std::string last = (run / "checkpoints/last.ckpt").string();
  const std::string summary = read_file(run / "summary.json");
  const std::string timing = read_file(run / "timing.json");
  const auto complete = run_ltfit("train --json --resume " + last, kResumeLimits);
  INFO(complete.output);
  CHECK(complete.exit_code == 0);
  CHECK_THAT(complete.output, Contains("is complete") && Contains("--init-from"));
  CHECK(complete.stdout_text == summary);
  CHECK(read_file(run / "summary.json") == summary);
  CHECK(read_file(run / "timing.json") == timing);
  CHECK(run_ltfit("train --resume auto --run-dir " + run.string(), kResumeLimits).exit_code == 0);
  CHECK(read_file(run / "timing.json") == timing);

  const auto reshaped = run_ltfit(
      "train --resume " + last + " --set train.epochs=5 --set data.batch_size=4", kResumeLimits);
  CHECK(reshaped.exit_code == 2);
  CHECK_THAT(reshaped.output, Contains("train.epochs 1 -> 5") &&
                                  Contains("data.batch_size 8 -> 4") && Contains("--init-from"));

  const auto best =
      run_ltfit("train --resume " + (run / "checkpoints/best.ckpt").string(), kResumeLimits);
  CHECK(best.exit_code == 4);
  CHECK_THAT(best.output, Contains("weights only") && Contains("last.ckpt"));
}

TEST_CASE("train --init-from: a new run from a checkpoint's weights, same classes only",
          "[cli][resume]") {
  TempDir dir;
  const fs::path run = train_tiny_relative(dir.path());
  const std::string best = (run / "checkpoints/best.ckpt").string();
  const auto more = run_ltfit("train --init-from " + best + " --set train.epochs=2", kResumeLimits);
  INFO(more.output);
  REQUIRE(more.exit_code == 0);
  CHECK_THAT(more.output, Contains("weights from " + best));
  const fs::path second = dir.path() / "runs/tiny-2";
  REQUIRE(fs::exists(second / "summary.json"));
  CHECK(nlohmann::json::parse(read_file(second / "summary.json"))["epochs"] == 2);
  CHECK_THAT(read_file(second / "config.yaml"), Contains("pretrained: none"));

  // Data of other classes: exit 4 naming both.
  fs::copy(dir.path() / "data", dir.path() / "other", fs::copy_options::recursive);
  for (const char* split : {"train", "valid"}) {
    fs::rename(dir.path() / "other" / split / "dog", dir.path() / "other" / split / "fox");
  }
  const auto other = run_ltfit(
      "train --init-from " + best + " --set data.root=" + dir.str() + "/other", kResumeLimits);
  CHECK(other.exit_code == 4);
  CHECK_THAT(other.output, Contains("[cat, dog]") && Contains("[cat, fox]"));
  const auto both = run_ltfit(
      "train --init-from " + best + " --resume auto --run-dir " + run.string(), kResumeLimits);
  CHECK(both.exit_code == 2);
}

TEST_CASE("a relative data.root is stored absolute: evaluate works from another folder",
          "[cli][resume]") {
  TempDir dir, elsewhere;
  const fs::path run = train_tiny_relative(dir.path());
  CHECK_THAT(read_file(run / "config.yaml"), Contains((dir.path() / "data").string()));
  const auto evaluated =
      run_ltfit("evaluate --checkpoint " + (run / "checkpoints/best.ckpt").string() + " --out " +
                    elsewhere.str() + "/o",
                "cd " + elsewhere.str() + " && " + kResumeLimits);
  INFO(evaluated.output);
  CHECK(evaluated.exit_code == 0);
}
