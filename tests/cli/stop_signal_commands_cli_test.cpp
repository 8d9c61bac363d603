// SIGTERM and SIGINT (once, then again) while export, show-batch, find-batch and bench-loader
// run (issue 40): each exits 130 and leaves no temporary file. export and show-batch are caught
// while their output's temporary file exists (LTFIT_TEST_HOLD_TEMP_FILE_MS holds it); the others
// once they log that their work has begun.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "ltfit/util/temp_files.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using ltfit::testing::run_bash;
using ltfit::testing::run_ltfit;
using ltfit::testing::TempDir;

namespace {

std::string tiny_config(const fs::path& root, const fs::path& out) {
  return "run: {name: tiny, out_dir: " + out.string() +
         ", seed: 5}\n"
         "data: {root: " +
         root.string() +
         ", image_size: 32, batch_size: 8, workers: 1}\n"
         "model: {arch: resnet18, pretrained: none, head: linear}\n"
         "train: {recipe: one_cycle, epochs: 1, lr: 2.0e-3, device: cpu}\n"
         "eval: {tta: false}\n";
}

// Runs `ltfit <args>` in the background with the temporary files held, waits (up to 30 s) until
// `ready` (a shell condition) holds, sends SIGTERM and 0.2 s later SIGINT, and prints the exit
// status.
std::string stop_script(const std::string& args, const fs::path& log, const std::string& ready) {
  return "LTFIT_TEST_HOLD_TEMP_FILE_MS=30000 " + std::string(LTFIT_BINARY) + " " + args + " >" +
         log.string() +
         " 2>&1 &\n"
         "pid=$!\n"
         "for i in $(seq 1 600); do\n"
         "  " +
         ready +
         " && break\n"
         "  kill -0 $pid 2>/dev/null || break\n"
         "  sleep 0.05\n"
         "done\n"
         "kill -TERM $pid; sleep 0.2; kill -INT $pid 2>/dev/null\n"
         "wait $pid\n"
         "echo $?\n";
}

// The temporary files ltfit left in `dir`.
std::string temp_files_in(const fs::path& dir) {
  std::string found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (ltfit::is_temp_file_name(name)) found += name + " ";
  }
  return found;
}

}  // namespace

TEST_CASE(
    "a stop signal during export, show-batch, find-batch or bench-loader: exit 130, no "
    "temporary file",
    "[cli][signals]") {
  TempDir dir;
  REQUIRE(
      run_ltfit("synth --out " + (dir.path() / "data").string() + " --train 16 --valid 8 --seed 1")
          .exit_code == 0);
  const fs::path config = dir.path() / "c.yaml";
  ltfit::testing::write_file(config, tiny_config(dir.path() / "data", dir.path() / "runs"));
  const fs::path out = dir.path() / "out";
  fs::create_directories(out);
  const fs::path log = dir.path() / "log.txt";
  const std::string temp_exists = "ls -a " + out.string() + " | grep -q '\\.tmp$'";
  std::string args, ready;

  SECTION("export") {
    const auto trained = run_ltfit("train --config " + config.string());
    INFO(trained.output);
    REQUIRE(trained.exit_code == 0);
    args = "export --checkpoint " + (dir.path() / "runs/tiny/checkpoints/best.ckpt").string() +
           " --out " + (out / "m.pth").string();
    ready = temp_exists;
  }
  SECTION("show-batch") {
    args = "show-batch --config " + config.string() + " --out " + (out / "b.png").string();
    ready = temp_exists;
  }
  SECTION("find-batch") {
    args = "find-batch --config " + config.string() + " --start 2";
    ready = "grep -q 'find-batch:' " + log.string();
  }
  SECTION("bench-loader") {
    args = "bench-loader --config " + config.string() + " --batches 1000000";
    ready = "grep -q 'bench-loader:' " + log.string();
  }
  const std::string status = run_bash(dir.path(), stop_script(args, log, ready));
  INFO(args << "\n" << ltfit::testing::read_file(log));
  CHECK(std::stoi(status) == 130);
  CHECK(temp_files_in(out).empty());
}
