// `ltfit experiment` end to end: a tiny plan on a synthetic set with one run that trains, one
// that cannot apply on a CPU (fp16) and one whose data root does not exist, so its child exits 3;
// the plan still finishes, reports all three as a rehearsal and exits 5 naming the failed run.
// A run whose config does not resolve stops the plan before any run (exit 2); a killed
// experiment takes its running child with it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>

#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::read_file;
using ltfit::testing::run_bash;
using ltfit::testing::run_ltfit;
using ltfit::testing::write_file;

TEST_CASE("experiment runs a plan, survives a failing run and writes the report",
          "[cli][experiment]") {
  ltfit::testing::TempDir dir;
  REQUIRE(
      run_ltfit("synth --out " + dir.str() + "/data --train 24 --valid 12 --seed 0").exit_code ==
      0);
  write_file(dir.path() / "plan" / "base.yaml",
             "run: {name: tiny, out_dir: " + dir.str() +
                 "/runs, seed: 5}\n"
                 "data: {root: " +
                 dir.str() +
                 "/data, image_size: 32, batch_size: 8, workers: 2}\n"
                 "model: {arch: resnet18, pretrained: none}\n"
                 "train: {recipe: one_cycle, epochs: 1, lr: 2.0e-3, device: cpu}\n"
                 "eval: {tta: true}\n");
  write_file(dir.path() / "plan" / "study.yaml",
             "title: s\ntrain_images: 24\nvalid_images: 12\nplatforms:\n  - {id: k, name: K80}\n"
             "runs:\n  - {id: base, times: {k: \"01:00\"}}\n");
  write_file(dir.path() / "plan" / "plan.yaml",
             "name: tiny\nbase: base.yaml\nstudy: study.yaml\nset: {train.frozen: true}\nruns:\n"
             "  - {id: fp32, label: fp32 run, study_run: base, set: {train.precision: fp32}}\n"
             "  - {id: fp16, label: fp16 run, set: {train.precision: fp16}}\n"
             "  - {id: bad, label: bad run, set: {data.root: " +
                 dir.str() + "/nowhere}}\n");
  const fs::path out = dir.path() / "report";
  const auto r = run_ltfit("experiment --plan " + dir.str() +
                           "/plan/plan.yaml --subset 0.5 --out " + out.string());
  INFO(r.output);
  REQUIRE(r.exit_code == 5);  // a run failed: the report is written, the exit code says so
  CHECK_THAT(r.output, Contains("[1/3] fp32") && Contains("[3/3] bad"));
  CHECK_THAT(r.output, Contains("1 run(s) of the plan failed: bad"));
  CHECK_THAT(r.stdout_text, Contains("report.md"));

  const std::string csv = read_file(out / "results.csv");
  INFO(csv);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 4);  // header + 3 runs
  CHECK_THAT(csv, Contains("\nfp32,fp32 run,ok,,1,8,fp32,"));
  CHECK_THAT(csv, Contains("\nfp16,fp16 run,n/a,") && Contains("fp16 needs a CUDA device"));
  CHECK_THAT(csv, Contains("\nbad,bad run,failed,\"exit 3: ") && Contains("nowhere"));
  CHECK(fs::exists(out / "runs" / "fp32" / "summary.json"));
  CHECK_FALSE(fs::exists(out / "runs" / "fp16"));  // not applicable: never started
  CHECK_THAT(read_file(out / "runs" / "bad.log"), Contains("nowhere"));

  const std::string md = read_file(out / "report.md");
  CHECK_THAT(md, Contains("REHEARSAL") && Contains("estimate") && Contains("data.subset=0.5"));
  CHECK_THAT(md, Contains("| fp32 run | ok |") && Contains("| 01:00 |"));
  CHECK(fs::file_size(out / "total_time.png") > 1000);
  CHECK(fs::file_size(out / "curves.png") > 1000);

  // The same --out again is refused: a report never overwrites an earlier one.
  const auto again =
      run_ltfit("experiment --plan " + dir.str() + "/plan/plan.yaml --out " + out.string());
  CHECK(again.exit_code == 2);
  CHECK_THAT(again.output, Contains("already holds an experiment"));
}

TEST_CASE("experiment: help, and plan mistakes exit 2", "[cli][experiment]") {
  const auto help = run_ltfit("experiment --help");
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.stdout_text, Contains("--plan") && Contains("--subset"));
  ltfit::testing::TempDir dir;
  write_file(dir.path() / "plan.yaml", "name: p\nbase: b.yaml\nruns:\n  - id: a\n    sett: {}\n");
  const auto r = run_ltfit("experiment --plan " + dir.str() + "/plan.yaml");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("plan.yaml:5") && Contains("runs[0].sett"));
  write_file(dir.path() / "good.yaml", "name: p\nbase: b.yaml\nruns:\n  - id: a\n");
  const auto subset = run_ltfit("experiment --plan " + dir.str() + "/good.yaml --subset 2");
  CHECK(subset.exit_code == 2);
  CHECK_THAT(subset.output, Contains("--subset"));
  write_file(dir.path() / "gpus.yaml", "name: p\nbase: b.yaml\nruns:\n  - id: a\n    gpus: 0\n");
  const auto gpus = run_ltfit("experiment --plan " + dir.str() + "/gpus.yaml");
  CHECK(gpus.exit_code == 2);
  CHECK_THAT(gpus.output, Contains("gpus.yaml:5: runs[0].gpus: expected a number of GPUs"));
}

TEST_CASE("experiment: a row needing more GPUs than the machine has is n/a, the plan exits 0",
          "[cli][experiment][study]") {
  ltfit::testing::TempDir dir;
  write_file(dir.path() / "base.yaml", "data: {batch_size: 1024}\n");
  write_file(dir.path() / "plan.yaml",
             "name: p\nbase: base.yaml\nruns:\n  - {id: many, label: many GPUs, gpus: 1024}\n");
  const fs::path out = dir.path() / "report";
  const auto r = run_ltfit("experiment --plan " + dir.str() + "/plan.yaml --out " + out.string());
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("n/a: needs 1024 GPUs, this machine has "));
  CHECK_THAT(read_file(out / "results.csv"), Contains("\nmany,many GPUs,n/a,"));
  CHECK_THAT(read_file(out / "report.md"), Contains("| many GPUs | 1024 | **n/a**: needs 1024"));
  CHECK_FALSE(fs::exists(out / "runs" / "many"));
}

TEST_CASE("experiment: a run whose config does not resolve exits 2 before any run starts",
          "[cli][experiment]") {
  ltfit::testing::TempDir dir;
  write_file(dir.path() / "base.yaml", "train: {device: cpu}\n");
  write_file(dir.path() / "plan.yaml",
             "name: p\nbase: base.yaml\nruns:\n  - {id: good, set: {train.epochs: 1}}\n"
             "  - {id: typo, set: {train.epocs: 2}}\n");
  const fs::path out = dir.path() / "report";
  const auto r = run_ltfit("experiment --plan " + dir.str() + "/plan.yaml --out " + out.string());
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("plan.yaml:5") && Contains("'typo'") && Contains("train.epocs"));
  CHECK_FALSE(fs::exists(out));  // nothing started, not even the good run

  write_file(dir.path() / "zero.yaml", "name: p\nbase: /dev/zero\nruns:\n  - {id: a}\n");
  const auto zero = run_ltfit("experiment --plan " + dir.str() + "/zero.yaml --out " +
                              (dir.path() / "zero").string());
  INFO(zero.output);
  CHECK(zero.exit_code == 2);
  CHECK_THAT(zero.output, Contains("'a'") && Contains("/dev/zero"));
  CHECK_FALSE(fs::exists(dir.path() / "zero"));
}

TEST_CASE("experiment: kill -9 of experiment ends its running train child", "[cli][experiment]") {
  ltfit::testing::TempDir dir;
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/data --train 64 --valid 8 --seed 0").exit_code ==
          0);
  write_file(dir.path() / "base.yaml",
             "run: {seed: 5}\ndata: {root: " + dir.str() +
                 "/data, image_size: 32, batch_size: 4, workers: 1}\n"
                 "model: {arch: resnet18, pretrained: none}\n"
                 "train: {recipe: one_cycle, epochs: 1000, device: cpu}\n");
  write_file(dir.path() / "plan.yaml", "name: p\nbase: base.yaml\nruns:\n  - {id: long}\n");
  // Waits for the child's first epoch line, kills the experiment, then reports how long the
  // child outlived it (in tenths of a second; a zombie counts as gone).
  const std::string script =
      "export OMP_NUM_THREADS=1\n" + std::string(LTFIT_BINARY) + " experiment --plan " + dir.str() +
      "/plan.yaml --out " + dir.str() +
      "/out >/dev/null 2>&1 &\n"
      "exp=$!\n"
      "for i in $(seq 600); do child=$(pgrep -P $exp | head -1)\n"
      "  [ -n \"$child\" ] && grep -q 'epoch' " +
      dir.str() +
      "/out/runs/long.log 2>/dev/null && break; sleep 0.1; done\n"
      "[ -n \"$child\" ] || { echo 'no child'; kill -9 $exp; exit 0; }\n"
      "kill -9 $exp\n"
      "for i in $(seq 150); do s=$(awk '{print $3}' /proc/$child/stat 2>/dev/null)\n"
      "  if [ -z \"$s\" ] || [ \"$s\" = Z ]; then echo \"gone after $i\"; exit 0; fi\n"
      "  sleep 0.1; done\n"
      "echo alive; kill -9 $child\n";
  const std::string out = run_bash(dir.path(), script);
  INFO(out);
  REQUIRE_THAT(out, Contains("gone after "));
  const int tenths = std::stoi(out.substr(out.find("gone after ") + 11));
  // The child finishes its step, checkpoints and exits: about a second on an idle machine; 10 s
  // leaves room for a loaded one.
  CHECK(tenths <= 100);
}

namespace {

// Reads epochs.csv's columns that a resumed run must reproduce exactly (not its timings).
std::string epoch_results(const fs::path& epochs_csv) {
  std::istringstream in(read_file(epochs_csv));
  std::string line, out;
  while (std::getline(in, line)) {
    std::istringstream cells(line);
    std::string cell;
    for (int i = 0; i < 6 && std::getline(cells, cell, ','); ++i) out += cell + ",";
    out += "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("experiment: a kill_at_epoch row is killed mid-epoch, resumed, and ends as if never cut",
          "[cli][experiment]") {
  ltfit::testing::TempDir dir;
  REQUIRE(
      run_ltfit("synth --out " + dir.str() + "/data --train 48 --valid 16 --seed 0").exit_code ==
      0);
  write_file(dir.path() / "base.yaml",
             "run: {seed: 5}\ndata: {root: " + dir.str() +
                 "/data, image_size: 32, batch_size: 8, workers: 1}\n"
                 "model: {arch: resnet18, pretrained: none}\n"
                 "train: {recipe: one_cycle, epochs: 3, lr: 2.0e-3, device: cpu}\n");
  write_file(dir.path() / "plan.yaml",
             "name: p\nbase: base.yaml\nruns:\n  - {id: whole, label: never cut}\n"
             "  - {id: cut, label: cut halfway, kill_at_epoch: 1.5}\n");
  const fs::path out = dir.path() / "report";
  const auto r = run_ltfit("experiment --plan " + dir.str() + "/plan.yaml --out " + out.string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("killed (SIGKILL) at epoch 1.5") &&
                           Contains("[2/2] cut: killed at epoch 1.5 after"));
  const fs::path runs = out / "runs";
  // The first attempt died at SIGKILL without a word; the second resumed from epoch 1's end.
  CHECK_THAT(read_file(runs / "cut.resumed.log"), Contains("resum"));
  // Resumed exactly: the same losses and accuracy as the run never cut, epoch for epoch.
  CHECK(epoch_results(runs / "cut" / "epochs.csv") == epoch_results(runs / "whole" / "epochs.csv"));
  const std::string epochs = read_file(runs / "cut" / "epochs.csv");
  CHECK(std::count(epochs.begin(), epochs.end(), '\n') == 4);  // header + 3 epochs, none twice

  const std::string csv = read_file(out / "results.csv");
  INFO(csv);
  CHECK_THAT(csv, Contains(",kill_at_epoch,killed_after_seconds,time_lost_seconds\n"));
  const std::string cut = ltfit::testing::line_with(csv, "cut,cut halfway,ok,");
  CHECK_THAT(cut, Contains(",1.5,"));
  CHECK_THAT(ltfit::testing::line_with(csv, "whole,never cut,ok,"), Contains(",,,"));
  const std::string md = read_file(out / "report.md");
  CHECK_THAT(md, Contains("## Killed and resumed"));
  CHECK_THAT(ltfit::testing::line_with(md, "| cut halfway | ok | epoch 1.5 |"),
             Contains("| epoch 1, batch 0 ("));
}

TEST_CASE("experiment: a kill_at_epoch at or past the run's end exits 2 before any run",
          "[cli][experiment]") {
  ltfit::testing::TempDir dir;
  write_file(dir.path() / "base.yaml", "train: {recipe: one_cycle, device: cpu, epochs: 4}\n");
  write_file(dir.path() / "plan.yaml",
             "name: p\nbase: base.yaml\nruns:\n  - {id: late, kill_at_epoch: 4}\n");
  const auto r = run_ltfit("experiment --plan " + dir.str() + "/plan.yaml --out " +
                           (dir.path() / "o").string());
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("'late'") &&
                           Contains("kill_at_epoch: 4 is not before the run's "
                                    "end (4 epochs)") &&
                           Contains("kill_at_epoch: 2"));
  CHECK_FALSE(fs::exists(dir.path() / "o"));
}
