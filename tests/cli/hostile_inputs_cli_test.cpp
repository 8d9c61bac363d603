// The ltfit binary against inputs a hostile or careless user gives it (issue 10, medium and low):
// no input ends in exit 1 (every failure has a documented code), names that are not UTF-8 run
// end to end, a run directory has one writer, a resumed run writes only into its own run
// directory, and a stop signal stops a download but not a run that has already completed.
// Every hostile input is generated here; commands run under a memory cap and a deadline.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "ltfit/run/run_dir.h"
#include "ltfit/util/utf8.h"
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

// Every ltfit below runs with at most this much address space (a regression that reads
// /dev/zero fails instead of taking the machine) and this deadline.
// The child's address space capped (none under ASan: child_cap.h), and a wall-clock bound.
const std::string kHostileLimits =
    ltfit::testing::child_address_space_cap(6000000ull * 1024) + " timeout -s KILL 120 ";
const std::string kUnwritable = "/dev/null/sub";  // ENOTDIR, even for root

std::string tiny_hostile_config(const fs::path& root, const fs::path& out, int epochs = 1) {
  return "run: {name: tiny, out_dir: \"" + out.string() +
         "\", seed: 5}\n"
         "data: {root: \"" +
         root.string() +
         "\", image_size: 32, batch_size: 8, workers: 2}\n"
         "model: {arch: resnet18, pretrained: none, head: linear}\n"
         "train: {recipe: one_cycle, epochs: " +
         std::to_string(epochs) +
         // The attacks below resume the run's checkpoints: kept resumable once it finishes.
         ", lr: 2.0e-3, device: cpu, checkpoint: {keep_resumable: true}}\n"
         "eval: {tta: false}\n";
}

// Writes a synthetic set and trains one tiny run in `dir`; returns its last checkpoint.
fs::path train_tiny_hostile(const fs::path& dir) {
  REQUIRE(run_ltfit("synth --out " + (dir / "data").string() + " --train 16 --valid 8 --seed 1")
              .exit_code == 0);
  write_file(dir / "c.yaml", tiny_hostile_config(dir / "data", dir / "runs"));
  const auto trained = run_ltfit("train --config " + (dir / "c.yaml").string());
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);
  return dir / "runs/tiny/checkpoints/last.ckpt";
}

struct BadInput {
  std::string args;           // ltfit's arguments
  std::vector<int> expected;  // the documented codes it may end with
};

// Runs every case (four at a time, each under kHostileLimits) and checks its exit code: never 1,
// one of the expected ones, and never the fallback for exceptions ltfit does not expect.
void check_exit_codes(const fs::path& dir, const std::vector<BadInput>& table) {
  std::string list;
  for (std::size_t i = 0; i < table.size(); ++i) {
    const std::string n = std::to_string(i);
    const fs::path script = dir / ("case-" + n + ".sh");
    write_file(script, kHostileLimits + LTFIT_BINARY + " " + table[i].args + " >" + dir.string() +
                           "/log-" + n + " 2>&1 </dev/null\necho $? >" + dir.string() + "/code-" +
                           n + "\n");
    list += script.string() + "\n";
  }
  write_file(dir / "cases.txt", list);
  run_bash(dir, "xargs -P 4 -n 1 bash < " + (dir / "cases.txt").string() + "\n");
  for (std::size_t i = 0; i < table.size(); ++i) {
    const std::string log = read_file(dir / ("log-" + std::to_string(i)));
    INFO("ltfit " << table[i].args.substr(0, 200) << "\n" << log.substr(0, 2000));
    const int code = std::stoi(read_file(dir / ("code-" + std::to_string(i))));
    CHECK(code != 1);
    CHECK_THAT(table[i].expected, Catch::Matchers::VectorContains(code));
    CHECK_THAT(log, !Contains("internal error"));  // the fallback for unexpected exceptions
  }
}

}  // namespace

TEST_CASE("no bad config or input file makes ltfit exit 1", "[cli][exit_codes]") {
  TempDir dir;
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/data --train 16 --valid 8 --seed 1").exit_code ==
          0);
  write_file(dir.path() / "c.yaml", tiny_hostile_config(dir.path() / "data", dir.path() / "runs"));
  const std::string c = (dir.path() / "c.yaml").string();
  const fs::path fifo = dir.path() / "config.fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  write_file(dir.path() / "big.yaml", "run: {}\n");
  fs::resize_file(dir.path() / "big.yaml", 2 << 20);  // sparse
  fs::create_directories(dir.path() / "locked");
  const auto lock = ltfit::RunDirLock::try_acquire(dir.path() / "locked");
  REQUIRE(lock.has_value());
  check_exit_codes(dir.path(),
                   {
                       {"train --config /dev/zero", {2}},
                       {"train --config " + fifo.string(), {2}},
                       {"train --config " + dir.str(), {2}},
                       {"train --config " + dir.str() + "/big.yaml", {2}},
                       {"train --config " + c + " --set train.lr=1e308", {2}},
                       {"train --config " + c + " --set train.one_cycle.div=1e-300", {2}},
                       {"train --config " + c + " --set run.name=" + std::string(300, 'n'), {2}},
                       {"train --config " + c + " --set run.name=..", {2}},
                       {"train --config " + c + " --set run.out_dir=" + kUnwritable, {5}},
                       {"train --config " + c + " --run-dir " + dir.str() + "/locked", {2}},
                       {"lr-find --config " + c + " --steps 5 --out " + kUnwritable, {5}},
                       {"experiment --plan /dev/zero", {2}},
                       {"experiment --plan " + fifo.string(), {2}},
                   });
  CHECK_FALSE(fs::exists(dir.path() / "config.yaml"));  // run.name: .. wrote nothing above runs/
}

TEST_CASE("no bad output folder or checkpoint argument makes ltfit exit 1", "[cli][exit_codes]") {
  TempDir dir;
  const fs::path checkpoint = train_tiny_hostile(dir.path());
  fs::create_directories(dir.path() / "loose");
  fs::copy_file(checkpoint, dir.path() / "loose/x.ckpt");
  const std::string ckpt = checkpoint.string();
  check_exit_codes(dir.path(),
                   {
                       {"train --resume " + dir.str() + "/loose/x.ckpt", {2}},
                       {"evaluate --checkpoint " + ckpt + " --out " + kUnwritable, {5}},
                       {"evaluate --checkpoint " + dir.str(), {4}},
                       {"predict --checkpoint " + ckpt + " /dev/null", {3}},
                       {"export --checkpoint " + ckpt + " --out " + kUnwritable + "/m.pth", {4, 5}},
                   });
}

TEST_CASE("names that are not UTF-8: train, evaluate --json and predict --json exit 0",
          "[cli][utf8]") {
  TempDir dir;
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/data --train 16 --valid 8 --seed 1").exit_code ==
          0);
  // Root, class folders and files renamed to Latin-1 bytes, a backslash and a lone 0xFF.
  const std::string root = dir.str() + "/r\xf6ot";
  const std::vector<std::pair<std::string, std::string>> classes = {{"cat", "ch\xe2t"},
                                                                    {"dog", "d\\og\xff"}};
  for (const char* split : {"train", "valid"}) {
    for (const auto& [from, to] : classes) {
      const fs::path target = fs::path(root) / split / to;
      fs::create_directories(target);
      int n = 0;
      for (const auto& entry : fs::directory_iterator(dir.path() / "data" / split / from)) {
        fs::copy_file(entry.path(), target / ("img\xfd" + std::to_string(n++) + ".jpg"));
      }
    }
  }
  std::string config = tiny_hostile_config(root, dir.path() / "runs");
  config.replace(config.find("tta: false"), 10, "tta: true");
  write_file(dir.path() / "c.yaml", config);

  const auto trained = run_ltfit("train --json --config " + dir.str() + "/c.yaml");
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);
  const fs::path run = dir.path() / "runs/tiny";
  REQUIRE(fs::exists(run / "summary.json"));
  const auto summary = nlohmann::json::parse(read_file(run / "summary.json"));
  CHECK(nlohmann::json::parse(trained.stdout_text) == summary);
  CHECK(ltfit::unescape_utf8(summary["classes"][0].get<std::string>()) == "ch\xe2t");
  CHECK(summary["classes"][1] == "d\\\\og\\xff");  // the documented escaping
  const auto env = nlohmann::json::parse(read_file(run / "env.json"));
  CHECK(env.dump().find("r\\\\xf6ot") != std::string::npos);

  const std::string ckpt = (run / "checkpoints/last.ckpt").string();
  const auto evaluated = run_ltfit("evaluate --json --tta --checkpoint " + ckpt);
  INFO(evaluated.output);
  REQUIRE(evaluated.exit_code == 0);
  const auto eval = nlohmann::json::parse(evaluated.stdout_text);
  CHECK(eval["classes"] == summary["classes"]);
  const std::string csv = read_file(run / "predictions.csv");
  CHECK_THAT(csv, Contains("prob_ch\\xe2t") && Contains("/img\\xfd0.jpg,"));

  const std::string image = root +
                            "/valid/ch\xe2t/img\xfd"
                            "0.jpg";
  const auto predicted = run_ltfit("predict --json --checkpoint " + ckpt + " '" + image + "'");
  INFO(predicted.output);
  REQUIRE(predicted.exit_code == 0);
  const auto prediction = nlohmann::json::parse(predicted.stdout_text);  // one image, one line
  CHECK(ltfit::unescape_utf8(prediction["image"].get<std::string>()) == image);
}

TEST_CASE("a second trainer on a run directory exits 2 naming the holder", "[cli][run_dir]") {
  TempDir dir;
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/data --train 16 --valid 8 --seed 1").exit_code ==
          0);
  write_file(dir.path() / "c.yaml", tiny_hostile_config(dir.path() / "data", dir.path() / "runs"));
  const fs::path run = dir.path() / "run";
  fs::create_directories(run);
  // This process plays the first trainer, as far as the lock is concerned.
  auto lock = ltfit::RunDirLock::try_acquire(run);
  REQUIRE(lock.has_value());
  const std::string pid = "pid " + std::to_string(getpid());
  for (const std::string& args :
       {"train --config " + dir.str() + "/c.yaml --run-dir " + run.string(),
        "train --resume auto --config " + dir.str() + "/c.yaml --run-dir " + run.string()}) {
    INFO(args);
    const auto second = run_ltfit(args);
    CHECK(second.exit_code == 2);
    CHECK_THAT(second.output, Contains("in use by") && Contains(pid) && Contains(run.string()));
  }
  CHECK_FALSE(fs::exists(run / "config.yaml"));  // the second wrote nothing
  CHECK_FALSE(fs::exists(run / "steps.csv"));
}

TEST_CASE("train --resume writes only into the checkpoint's own run directory", "[cli][resume]") {
  TempDir dir;
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/data --train 16 --valid 8 --seed 1").exit_code ==
          0);
  // The checkpoint's embedded config points at victim/; the run has since moved to moved/.
  write_file(dir.path() / "c.yaml",
             tiny_hostile_config(dir.path() / "data", dir.path() / "victim", 2));
  REQUIRE(run_ltfit("train --config " + dir.str() + "/c.yaml").exit_code == 0);
  fs::rename(dir.path() / "victim/tiny", dir.path() / "moved");
  fs::remove_all(dir.path() / "victim");
  fs::copy_file(dir.path() / "moved/checkpoints/last.ckpt", dir.path() / "loose.ckpt");

  const auto loose = run_ltfit("train --resume " + dir.str() + "/loose.ckpt");
  CHECK(loose.exit_code == 2);
  CHECK_THAT(loose.output, Contains("loose.ckpt") && Contains("--run-dir"));
  CHECK_FALSE(fs::exists(dir.path() / "victim"));

  // Without its summary.json the run is not complete: the resume finishes it, writing there.
  fs::remove(dir.path() / "moved/summary.json");
  const auto owned = run_ltfit("train --resume " + dir.str() + "/moved/checkpoints/last.ckpt");
  INFO(owned.output);
  CHECK(owned.exit_code == 0);
  CHECK(fs::exists(dir.path() / "moved/summary.json"));
  CHECK_FALSE(fs::exists(dir.path() / "victim"));
}

TEST_CASE("SIGTERM or SIGHUP stops a pretrained-weights download in train: exit 130, no partial",
          "[cli][download]") {
  REQUIRE(ltfit::testing::python3_available());
  // Through `timeout` (kHostileLimits), which passes the signal on to ltfit and then to its whole
  // process group: ltfit gets it twice, one request.
  const std::string signal = GENERATE(as<std::string>{}, "TERM", "HUP");
  INFO(signal);
  TempDir dir, served;
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/data --train 16 --valid 8 --seed 1").exit_code ==
          0);
  write_file(dir.path() / "c.yaml", tiny_hostile_config(dir.path() / "data", dir.path() / "runs"));
  ltfit::testing::HttpServer server(served.path());
  const fs::path cache = dir.path() / "hub" / "hub" / "checkpoints";
  // The server answers with headers and then nothing: only the signal can end the download.
  const std::string script = "export TORCH_HOME=" + dir.str() +
                             "/hub LTFIT_WEIGHTS_BASE_URL=" + server.url() + "/hang\n" +
                             kHostileLimits + LTFIT_BINARY + " train --config " + dir.str() +
                             "/c.yaml --set model.pretrained=imagenet >" + dir.str() +
                             "/log 2>&1 &\n"
                             "pid=$!\n"
                             "for i in $(seq 1 1200); do\n"  // however slow the start
                             "  ls " +
                             cache.string() +
                             "/*.partial-* >/dev/null 2>&1 && break\n"
                             "  sleep 0.05\n"
                             "done\n"
                             "sleep 0.3\n"
                             "kill -" +
                             signal +
                             " $pid\n"
                             "start=$(date +%s%N)\n"
                             "wait $pid\n"
                             "echo $? $(( ($(date +%s%N) - start) / 1000000 ))\n";
  const std::string out = run_bash(dir.path(), script);
  const std::string log = read_file(dir.path() / "log");
  INFO(log);
  int code = -1, millis = -1;
  REQUIRE(std::sscanf(out.c_str(), "%d %d", &code, &millis) == 2);
  CHECK(code == 130);
  CHECK(millis < 3000);
  CHECK_THAT(log, Contains("stopped by a signal"));
  REQUIRE(fs::is_directory(cache));
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(cache)) {
    left.push_back(entry.path().filename().string());
  }
  CHECK(left.empty());
}

TEST_CASE("SIGTERM during the last epoch's validation: the run completes and exits 0",
          "[cli][resume]") {
  TempDir dir;
  // Few training steps, a long validation: the signal lands while the last epoch validates.
  REQUIRE(
      run_ltfit("synth --out " + dir.str() + "/data --train 16 --valid 400 --seed 1").exit_code ==
      0);
  std::string config = tiny_hostile_config(dir.path() / "data", dir.path() / "runs");
  config.replace(config.find("image_size: 32"), 14, "image_size: 96");
  write_file(dir.path() / "c.yaml", config);
  const fs::path run = dir.path() / "run";
  const std::string script =
      kHostileLimits + LTFIT_BINARY + " train --config " + dir.str() + "/c.yaml --run-dir " +
      run.string() + " >" + dir.str() +
      "/log 2>&1 &\n"
      "pid=$!\n"
      "for i in $(seq 1 1200); do\n"  // both steps (16 images / 8) logged: validation runs
      "  n=$(wc -l < " +
      (run / "steps.csv").string() +
      " 2>/dev/null || echo 0)\n"
      "  [ \"$n\" -gt 2 ] && break\n"
      "  sleep 0.05\n"
      "done\n"
      "sleep 0.2\n"
      "kill -TERM $pid\n"
      "wait $pid\n"
      "echo $?\n";
  const std::string status = run_bash(dir.path(), script);
  const std::string log = read_file(dir.path() / "log");
  INFO(log);
  CHECK(std::stoi(status) == 0);
  CHECK_THAT(log, Contains("stop requested after the last epoch") &&
                      Contains("arrived after training had completed"));
  CHECK(fs::exists(run / "summary.json"));
  CHECK(fs::exists(run / "checkpoints/last.ckpt"));
}
