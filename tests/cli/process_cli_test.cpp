// Process-level robustness through the binary (issue 21): repeated stop signals are one request
// (checkpoint, exit 130), SIGHUP is a stop, `ltfit experiment` under a process-group Ctrl-C
// keeps its child's checkpoint, stdout that cannot be written is exit 5, a file-size limit is a
// full disk (exit 5), closed standard descriptors never capture files, stale temporaries are
// removed, and evaluate / predict / lr-find stop with exit 130 leaving no temporary file.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "ltfit/train/checkpoint.h"
#include "ltfit/util/atomic_file.h"
#include "ltfit/util/temp_files.h"
#include "support/child_cap.h"
#include "support/http_server.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::read_file;
using ltfit::testing::run_bash;
using ltfit::testing::run_ltfit;
using ltfit::testing::TempDir;
using ltfit::testing::write_file;

namespace {

// The child's address space capped (none under ASan: child_cap.h), and a wall-clock bound.
const std::string kProcessLimits =
    ltfit::testing::child_address_space_cap(6000000ull * 1024) + " timeout -s KILL 120 ";

// ~40 steps of a few hundred ms on two cores: long enough to be interrupted mid-run.
std::string slow_process_config(const fs::path& root) {
  return "run: {name: slow, seed: 5, deterministic: true}\n"
         "data: {root: " +
         root.string() +
         ", image_size: 64, batch_size: 16, workers: 2}\n"
         "model: {arch: resnet18, pretrained: none, head: fastai}\n"
         "train: {recipe: one_cycle, epochs: 8, lr: 2.0e-3, device: cpu,\n"
         "        checkpoint: {every_minutes: 0, keep: 2}}\n"
         "eval: {tta: false}\n";
}

// A seconds-long run: 16 + 8 images of 32 px, one epoch.
std::string tiny_process_config(const fs::path& root, const fs::path& out) {
  return "run: {name: tiny, out_dir: \"" + out.string() +
         "\", seed: 5}\n"
         "data: {root: \"" +
         root.string() +
         "\", image_size: 32, batch_size: 8, workers: 2}\n"
         "model: {arch: resnet18, pretrained: none, head: linear}\n"
         "train: {recipe: one_cycle, epochs: 1, lr: 2.0e-3, device: cpu}\n"
         "eval: {tta: false}\n";
}

void synth_images(const fs::path& dir, int train, int valid) {
  const auto r = run_ltfit("synth --out " + dir.string() + " --train " + std::to_string(train) +
                           " --valid " + std::to_string(valid) + " --seed 2");
  REQUIRE(r.exit_code == 0);
}

// Bash: waits (up to 60 s) until `file` has more than `rows` lines or the process `$pid` ended.
std::string wait_for_rows(const fs::path& file, int rows) {
  return "for i in $(seq 1 1200); do\n"
         "  n=$(wc -l < " +
         file.string() +
         " 2>/dev/null || echo 0)\n"
         "  [ \"$n\" -gt " +
         std::to_string(rows) +
         " ] && break\n"
         "  kill -0 $pid 2>/dev/null || break\n"
         "  sleep 0.05\n"
         "done\n";
}

// Our temporary files left in `dir`.
std::vector<std::string> temp_files_in(const fs::path& dir) {
  std::vector<std::string> found;
  if (!fs::is_directory(dir)) return found;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    const bool tmp = name.size() > 4 && name.substr(name.size() - 4) == ".tmp";
    if (ltfit::is_temp_file_name(name) || tmp) found.push_back(name);
  }
  return found;
}

// Trains the tiny run under `dir`; returns the run directory.
fs::path train_tiny_process(const fs::path& dir) {
  synth_images(dir / "data", 16, 8);
  write_file(dir / "c.yaml", tiny_process_config(dir / "data", dir / "runs"));
  const auto r = run_ltfit("train --config " + (dir / "c.yaml").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return dir / "runs" / "tiny";
}

}  // namespace

TEST_CASE("train: SIGTERM twice 50 ms apart, or SIGHUP, is one stop: checkpoint and exit 130",
          "[cli][signals]") {
  TempDir dir;
  synth_images(dir.path() / "data", 80, 16);
  write_file(dir.path() / "c.yaml", slow_process_config(dir.path() / "data"));
  const std::string kills = GENERATE(as<std::string>{},
                                     "kill -TERM $pid; sleep 0.05; kill -TERM $pid",  // timeout's
                                     "kill -HUP $pid");  // a closed terminal or SSH session
  INFO(kills);
  const fs::path run = dir.path() / "run";
  fs::remove_all(run);
  const std::string status =
      run_bash(dir.path(), std::string(LTFIT_BINARY) + " train --config " + dir.str() +
                               "/c.yaml --run-dir " + run.string() + " >" + dir.str() +
                               "/log 2>&1 &\npid=$!\n" + wait_for_rows(run / "steps.csv", 4) +
                               kills + "\nwait $pid\necho $?\n");
  const std::string log = read_file(dir.path() / "log");
  INFO(log);
  CHECK(std::stoi(status) == 130);
  CHECK_THAT(log, Contains("stop requested") && Contains("--resume auto"));
  REQUIRE(fs::exists(run / "checkpoints/last.ckpt"));
  CHECK(ltfit::read_checkpoint_meta((run / "checkpoints/last.ckpt").string()).global_step >= 4);
  CHECK(temp_files_in(run / "checkpoints").empty());
}

TEST_CASE("experiment: Ctrl-C to the process group stops the child with its checkpoint",
          "[cli][signals][experiment]") {
  TempDir dir;
  synth_images(dir.path() / "data", 80, 16);
  write_file(dir.path() / "base.yaml", slow_process_config(dir.path() / "data"));
  write_file(dir.path() / "plan.yaml",
             "name: p\nbase: base.yaml\nruns:\n  - {id: a, label: a}\n  - {id: b, label: b}\n");
  const fs::path out = dir.path() / "out";
  // setsid: the plan gets a process group of its own, which the script signals as a terminal's
  // Ctrl-C does (the parent and its child at once; the parent then passes it on to the child).
  const std::string status = run_bash(
      dir.path(), "setsid " + std::string(LTFIT_BINARY) + " experiment --plan " + dir.str() +
                      "/plan.yaml --out " + out.string() + " >" + dir.str() + "/log 2>&1 &\n" +
                      "pid=$!\n" + wait_for_rows(out / "runs/a/steps.csv", 4) +
                      "kill -INT -- -$pid\nwait $pid\necho $?\n");
  INFO(read_file(dir.path() / "log") + read_file(out / "runs/a.log"));
  CHECK(std::stoi(status) == 130);
  const std::string csv = read_file(out / "results.csv");
  INFO(csv);
  CHECK_THAT(csv, Contains("exit 130"));
  CHECK_THAT(csv, !Contains("killed by signal"));
  CHECK(fs::exists(out / "runs/a/checkpoints/last.ckpt"));
  CHECK(temp_files_in(out / "runs/a/checkpoints").empty());
}

TEST_CASE("stdout that cannot be written (> /dev/full) is exit 5 for every command",
          "[cli][stdout]") {
  TempDir dir;
  const fs::path run = train_tiny_process(dir.path());
  const std::string ckpt = (run / "checkpoints/last.ckpt").string();
  const std::vector<std::string> commands = {
      "train --config " + dir.str() + "/c.yaml --run-dir " + dir.str() + "/full --json",
      "evaluate --checkpoint " + ckpt + " --out " + dir.str() + "/eval --json",
      "predict --checkpoint " + ckpt + " --json " + dir.str() + "/data/valid",
      "predict --checkpoint " + ckpt + " " + dir.str() + "/data/valid",
      "envinfo --json",
      "models --json",
      "models",
      "configs",
      "configs --json",
      "configs " + dir.str() + "/c.yaml"};
  for (const std::string& command : commands) {
    INFO(command);
    const std::string out =
        run_bash(dir.path(), kProcessLimits + LTFIT_BINARY + " " + command + " >/dev/full 2>" +
                                 dir.str() + "/err </dev/null\necho $?\n");
    const std::string err = read_file(dir.path() / "err");
    INFO(err);
    CHECK(std::stoi(out) == 5);
    CHECK_THAT(err, Contains("cannot write to standard output") && Contains("HINT"));
    CHECK_THAT(err, !Contains("predicted"));  // predict stops at the first failed line
  }
}

TEST_CASE("a file-size limit (ulimit -f) is handled as a full disk: exit 5, no temporary file",
          "[cli][signals]") {
  TempDir dir;
  synth_images(dir.path() / "data", 16, 8);
  write_file(dir.path() / "c.yaml", tiny_process_config(dir.path() / "data", dir.path() / "runs"));
  const fs::path run = dir.path() / "run";
  // 20 MB: the logs and CSVs fit, a resnet18 checkpoint (~90 MB) does not.
  const std::string out =
      run_bash(dir.path(), "ulimit -f 20000; " + kProcessLimits + LTFIT_BINARY +
                               " train --config " + dir.str() + "/c.yaml --run-dir " +
                               run.string() + " >" + dir.str() + "/log 2>&1\necho $?\n");
  const std::string log = read_file(dir.path() / "log");
  INFO(log);
  CHECK(std::stoi(out) == 5);
  CHECK_THAT(log, Contains("File too large") && Contains("HINT"));
  CHECK(temp_files_in(run / "checkpoints").empty());
  CHECK(temp_files_in(run).empty());
}

TEST_CASE("closed stdin, stdout or stderr never make a file of the run receive the log", "[cli]") {
  TempDir dir;
  synth_images(dir.path() / "data", 16, 8);
  write_file(dir.path() / "c.yaml", tiny_process_config(dir.path() / "data", dir.path() / "runs"));
  const std::string closing = GENERATE(as<std::string>{}, "2>&-", "<&- >&- 2>&-");
  INFO(closing);
  const fs::path run = dir.path() / "run";
  fs::remove_all(run);
  const std::string out =
      run_bash(dir.path(), kProcessLimits + LTFIT_BINARY + " train --config " + dir.str() +
                               "/c.yaml --run-dir " + run.string() + " " + closing + "\necho $?\n");
  CHECK(std::stoi(out) == 0);
  const std::string epochs = read_file(run / "epochs.csv");
  INFO(epochs);
  CHECK(epochs.rfind("epoch,stage,", 0) == 0);
  CHECK_THAT(epochs, !Contains("info") && !Contains("epoch 1/"));
  CHECK_THAT(read_file(run / ".lock"), !Contains("info"));
  CHECK_THAT(read_file(run / "train.log"), Contains("info"));  // the log went where it belongs
}

TEST_CASE("stale temporaries of a killed writer are removed on start, live ones never",
          "[cli][resume]") {
  TempDir dir;
  const fs::path run = train_tiny_process(dir.path());
  const auto dated = [](const fs::path& path) {
    write_file(path, "cut short");
    fs::last_write_time(path, fs::file_time_type::clock::now() - std::chrono::minutes(5));
  };
  dated(run / "checkpoints/.step-9.ckpt.Ab12Cd.tmp");  // a checkpoint write killed by kill -9
  write_file(run / "checkpoints/notes.tmp", "the user's");
  const auto resumed = run_ltfit("train --resume auto --run-dir " + run.string());
  INFO(resumed.output);
  CHECK(resumed.exit_code == 0);
  CHECK_FALSE(fs::exists(run / "checkpoints/.step-9.ckpt.Ab12Cd.tmp"));
  CHECK(fs::exists(run / "checkpoints/notes.tmp"));

  const fs::path csv = dir.path() / "pred" / "p.csv";
  dated(dir.path() / "pred" / ".p.csv.Zz99Yy.tmp");  // a killed predict --out
  ltfit::AtomicFile live(csv.string());              // another writer of p.csv, still at work
  fs::last_write_time(live.temp_path(), fs::file_time_type::clock::now() - std::chrono::minutes(5));
  const auto predicted =
      run_ltfit("predict --checkpoint " + (run / "checkpoints/last.ckpt").string() + " --out " +
                csv.string() + " " + dir.str() + "/data/valid");
  INFO(predicted.output);
  CHECK(predicted.exit_code == 0);
  CHECK(fs::exists(csv));
  CHECK_FALSE(fs::exists(dir.path() / "pred" / ".p.csv.Zz99Yy.tmp"));
  CHECK(fs::exists(live.temp_path()));
}

TEST_CASE("evaluate, predict and lr-find stopped by a signal exit 130 without temporaries",
          "[cli][signals]") {
  TempDir dir;
  const fs::path run = train_tiny_process(dir.path());
  synth_images(dir.path() / "many", 8, 600);
  const std::string ckpt = (run / "checkpoints/last.ckpt").string();
  struct Case {
    std::string args;
    std::string started;  // a log line printed once the work is under way
  };
  const std::vector<Case> cases = {
      {"evaluate --tta --checkpoint " + ckpt + " --data " + dir.str() + "/many --out " + dir.str() +
           "/eval",
       "evaluating"},
      {"predict --tta --batch-size 1 --checkpoint " + ckpt + " --out " + dir.str() +
           "/pred/p.csv " + dir.str() + "/many/valid",
       "predicting"},
      {"lr-find --config " + dir.str() + "/c.yaml --steps 400 --out " + dir.str() + "/lr",
       "lr-find: 400 steps"}};
  const Case& c = cases[static_cast<std::size_t>(GENERATE(0, 1, 2))];
  INFO(c.args);
  const std::string status = run_bash(
      dir.path(), std::string(LTFIT_BINARY) + " " + c.args + " >" + dir.str() + "/log 2>&1 &\n" +
                      "pid=$!\n"
                      "for i in $(seq 1 1200); do\n"
                      "  grep -q '" +
                      c.started + "' " + dir.str() +
                      "/log && break\n"
                      "  kill -0 $pid 2>/dev/null || break\n"
                      "  sleep 0.05\n"
                      "done\n"
                      "sleep 0.1\nkill -INT $pid\nwait $pid\necho $?\n");
  const std::string log = read_file(dir.path() / "log");
  INFO(log);
  CHECK(std::stoi(status) == 130);
  CHECK_THAT(log, Contains("stopped by a signal"));
  for (const char* folder : {"eval", "pred", "lr"}) {
    INFO(folder);
    CHECK(temp_files_in(dir.path() / folder).empty());
  }
}

TEST_CASE("a mirror streaming more than the weight file's size is cut off at that size",
          "[cli][download]") {
  REQUIRE(ltfit::testing::python3_available());
  TempDir dir, served;
  synth_images(dir.path() / "data", 16, 8);
  write_file(dir.path() / "c.yaml", tiny_process_config(dir.path() / "data", dir.path() / "runs"));
  ltfit::testing::HttpServer server(served.path());
  // 200 MB for resnet18-f37072fd.pth (46830571 bytes), with no Content-Length to refuse early.
  const auto r = run_ltfit(
      "train --config " + dir.str() + "/c.yaml --set model.pretrained=imagenet",
      "TORCH_HOME=" + dir.str() + "/hub LTFIT_WEIGHTS_BASE_URL=" + server.flood_url(200000000, ""));
  INFO(r.output);
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output, Contains("more than 46830977 bytes") && Contains("HINT"));
  const fs::path cache = dir.path() / "hub/hub/checkpoints";
  CHECK((!fs::exists(cache) || fs::is_empty(cache)));
}
