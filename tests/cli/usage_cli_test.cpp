// Command-line usage a newcomer trips on: `predict --top 0` is a usage error (it printed only the
// paths), `--set data.root=~/x` means the home folder (the shell leaves `~` after `=` alone), and
// a config file that names no run names the run after itself.
#include <catch2/catch.hpp>

#include <filesystem>

#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::run_ltfit;

TEST_CASE("predict --top 0 exits 2 naming the flag", "[cli]") {
  ltfit::testing::TempDir dir;
  const auto r = run_ltfit("predict --top 0 --weights " + dir.str() + "/w.pth x.jpg");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("--top"));
}

TEST_CASE("train: ~ in a --set path is the home folder, the run is named after its config file",
          "[cli]") {
  ltfit::testing::TempDir dir;
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/home/pets --train 16 --valid 8 --seed 1")
              .exit_code == 0);
  const fs::path config = dir.path() / "pets.yaml";  // no run.name
  ltfit::testing::write_file(config,
                             "data: {image_size: 32, batch_size: 8, workers: 1}\n"
                             "model: {arch: resnet18, pretrained: none}\n"
                             "train: {recipe: one_cycle, epochs: 1, device: cpu}\n"
                             "eval: {tta: false}\nrun: {tensorboard: false}\n");
  const auto r = run_ltfit(
      "train --config " + config.string() + " --set data.root=~/pets --set run.out_dir=~/runs",
      "HOME=" + dir.str() + "/home");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(fs::exists(dir.path() / "home/runs/pets/checkpoints/best.ckpt"));
}
