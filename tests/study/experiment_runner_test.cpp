// The runner's multi-GPU rows without GPUs: the child's command line (plain, or under torchrun),
// the rows a machine cannot run (recorded n/a with the reason, never spawned), and the report's
// scaling section for them beside the study's published 2xT4 speed-up.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <thread>

#include "ltfit/study/experiment.h"
#include "ltfit/study/experiment_plan.h"
#include "ltfit/study/experiment_report.h"
#include "ltfit/study/run_cut.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::RunGpus;
using ltfit::RunStatus;
using ltfit::testing::read_file;
using ltfit::testing::write_file;

namespace {

const RunGpus kNone{};
const RunGpus kOne{true, false, 1};
const RunGpus kTwo{true, false, 2};
const RunGpus kAll{true, true, 0};

using ltfit::testing::line_with;

}  // namespace

TEST_CASE("a run's child is ltfit train, or ltfit train under torchrun for 2 or more GPUs",
          "[experiment][study]") {
  ltfit::ChildCommand command{"/opt/ltfit/bin/ltfit",
                              "/plans/base.yaml",
                              {{"data.batch_size", "64"}, {"train.precision", "fp16"}},
                              "/out/runs/r",
                              1,
                              "/venv/bin/python"};
  const std::vector<std::string> train = {"/opt/ltfit/bin/ltfit",
                                          "train",
                                          "--config",
                                          "/plans/base.yaml",
                                          "--set",
                                          "data.batch_size=64",
                                          "--set",
                                          "train.precision=fp16",
                                          "--run-dir",
                                          "/out/runs/r",
                                          "--json"};
  CHECK(ltfit::child_argv(command) == train);  // one process: today's child, no launcher

  command.processes = 2;
  std::vector<std::string> launched = {
      "/venv/bin/python", "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
      "--no-python"};
  launched.insert(launched.end(), train.begin(), train.end());
  CHECK(ltfit::child_argv(command) == launched);

  command.processes = 8;
  CHECK(ltfit::child_argv(command)[5] == "8");
}

TEST_CASE("GPU rows a machine cannot run say why - rows without gpus: are never held back",
          "[experiment][study]") {
  using ltfit::gpus_not_applicable_reason;
  CHECK(gpus_not_applicable_reason(kNone, 0, 64).empty());
  CHECK(gpus_not_applicable_reason(kOne, 0, 64) == "needs 1 GPU, this machine has 0");
  CHECK(gpus_not_applicable_reason(kTwo, 0, 64) == "needs 2 GPUs, this machine has 0");
  CHECK(gpus_not_applicable_reason(kTwo, 1, 64) == "needs 2 GPUs, this machine has 1");
  CHECK(gpus_not_applicable_reason(kAll, 0, 64) ==
        "gpus: all needs at least 1 GPU, this machine has 0");
  CHECK(gpus_not_applicable_reason(kOne, 1, 64).empty());
  CHECK(gpus_not_applicable_reason(kTwo, 8, 64).empty());
  CHECK(gpus_not_applicable_reason(kAll, 1, 64).empty());
  CHECK(gpus_not_applicable_reason(kAll, 4, 64).empty());
  // The global batch must split evenly over the GPUs, else the run would exit 2.
  CHECK(gpus_not_applicable_reason(kAll, 3, 64) ==
        "data.batch_size 64 (the global batch) does not split evenly over 3 GPUs");
  CHECK(gpus_not_applicable_reason(kAll, 3, 0).empty());  // unknown batch: left to the run
}

TEST_CASE("a plan's 1, 2 and all-GPU rows on a machine without GPUs are n/a, and the plan goes on",
          "[experiment][study]") {
  ltfit::testing::TempDir dir;
  write_file(dir.path() / "base.yaml", "data: {batch_size: 64}\ntrain: {device: cpu}\n");
  write_file(dir.path() / "plan.yaml",
             "name: scaling\nbase: base.yaml\nruns:\n"
             "  - {id: one, label: fp16 1 GPU, gpus: 1}\n"
             "  - {id: two, label: fp16 2 GPUs, gpus: 2}\n"
             "  - {id: every, label: fp16 all GPUs, gpus: all}\n");
  auto plan = ltfit::load_experiment_plan((dir.path() / "plan.yaml").string());
  plan.study.title = "s";
  plan.study.source = "study.yaml";
  plan.study.scaling = {{"Kaggle 2× Tesla T4", 2, 1.8, "seeds/003: a Kaggle guide", ""}};

  ltfit::ExperimentOptions options;
  options.out_dir = (dir.path() / "out").string();
  options.machine_gpus = 0;
  options.executable = "/nonexistent/ltfit";  // a spawn would throw: n/a rows never start
  std::vector<std::string> ended;
  options.on_end = [&](std::size_t, std::size_t, const ltfit::RunOutcome& o) {
    ended.push_back(o.id);
  };
  const auto outcomes = ltfit::run_experiment(plan, options);
  REQUIRE(outcomes.size() == 3);
  CHECK(ended == std::vector<std::string>{"one", "two", "every"});
  for (const auto& o : outcomes) {
    INFO(o.id);
    CHECK(o.status == RunStatus::kNotApplicable);
    CHECK(o.exit_code == -1);
    CHECK(o.machine_gpus == 0);
    CHECK_FALSE(fs::exists(o.run_dir));
  }
  CHECK(outcomes[1].reason == "needs 2 GPUs, this machine has 0");

  ltfit::write_experiment_report(options.out_dir, plan, outcomes, {});
  const std::string csv = read_file(dir.path() / "out" / "results.csv");
  CHECK_THAT(csv, Contains("\ntwo,fp16 2 GPUs,n/a,\"needs 2 GPUs, this machine has 0\","));
  CHECK_THAT(line_with(csv, "every,"), Contains(",all (0),"));
  const std::string md = read_file(dir.path() / "out" / "report.md");
  CHECK_THAT(md, Contains("## Multi-GPU scaling"));
  CHECK_THAT(md, Contains("Kaggle 2× Tesla T4 trains 1.80× as fast as one GPU"));
  const std::string two = line_with(md, "| fp16 2 GPUs | 2 |");
  CHECK_THAT(two, Contains("**n/a**: needs 2 GPUs, this machine has 0"));
  CHECK_THAT(two, Contains("| n/a | n/a | 1.80× (Kaggle 2× Tesla T4) |"));
  CHECK_THAT(line_with(md, "| fp16 all GPUs | all (0) |"), Contains("| n/a | n/a | — |"));
  CHECK_THAT(line_with(md, "| fp16 1 GPU | 1 |"),
             Contains("**n/a**: needs 1 GPU, this machine has 0") && Contains("| n/a |"));
}

TEST_CASE("a 2-GPU row runs its command under the real torchrun, one process per rank",
          "[experiment][study]") {
  // A stand-in for ltfit that records what each rank was started with; rank 0 writes the run
  // directory and the summary, as ltfit does under torchrun.
  ltfit::testing::TempDir dir;
  const fs::path fake = dir.path() / "fake-ltfit";
  write_file(
      fake,
      "#!/bin/sh\n"
      "for a; do [ \"$prev\" = --run-dir ] && dir=$a; prev=$a; done\n"
      "printf '%s %s/%s %s\\n' \"$0\" \"$RANK\" \"$WORLD_SIZE\" \"$*\" > \"$dir.rank$RANK\"\n"
      "[ \"$RANK\" = 0 ] || exit 0\n"
      "mkdir -p \"$dir\" && echo '{\"train_seconds\": 2.5, \"world_size\": 2}' > "
      "\"$dir/summary.json\"\n"
      "echo '{\"summary\": true}'\n");
  fs::permissions(fake, fs::perms::owner_all);
  fs::create_symlink(fake, dir.path() / "link");  // torchrun gets the real path, not the link
  write_file(dir.path() / "base.yaml", "data: {batch_size: 64}\n");
  write_file(dir.path() / "plan.yaml",
             "name: p\nbase: base.yaml\nruns:\n  - {id: two, gpus: 2, set: {train.epochs: 2}}\n");
  const auto plan = ltfit::load_experiment_plan((dir.path() / "plan.yaml").string());
  ltfit::ExperimentOptions options;
  options.out_dir = (dir.path() / "out").string();
  options.machine_gpus = 2;
  options.executable = (dir.path() / "link").string();
  const auto outcomes = ltfit::run_experiment(plan, options);
  REQUIRE(outcomes.size() == 1);
  const fs::path runs = dir.path() / "out" / "runs";
  const std::string log = fs::exists(runs / "two.log") ? read_file(runs / "two.log") : "";
  const bool no_torchrun = log.find("No module named") != std::string::npos ||
                           outcomes[0].reason.find("cannot start") != std::string::npos;
  if (outcomes[0].status != RunStatus::kOk && no_torchrun) {
    WARN("skipped: no Python with torch for torchrun ($LTFIT_PYTHON or python3): " +
         outcomes[0].reason + " " + log);
    return;
  }
  INFO(log);
  REQUIRE(outcomes[0].status == RunStatus::kOk);
  const std::string args = " train --config " + (dir.path() / "base.yaml").string() +
                           " --set train.epochs=2 --run-dir " + (runs / "two").string() + " --json";
  CHECK(read_file(runs / "two.rank0") == fs::canonical(fake).string() + " 0/2" + args + "\n");
  CHECK(read_file(runs / "two.rank1") == fs::canonical(fake).string() + " 1/2" + args + "\n");
  CHECK(read_file(runs / "two.json") == "{\"summary\": true}\n");  // rank 0's summary only
  CHECK(ltfit::read_experiment_row(outcomes[0]).world_size == 2);
}

TEST_CASE("the cut clock: due at the boundary epoch's end plus its fraction of that epoch's time",
          "[experiment][study]") {
  ltfit::testing::TempDir dir;
  const fs::path csv = dir.path() / "epochs.csv";
  const std::string header = "epoch,stage,train_loss,valid_loss,accuracy,error_rate,seconds\n";
  ltfit::CutClock whole(csv.string(), 2.0);
  ltfit::CutClock half(csv.string(), 1.5);
  CHECK_FALSE(whole.due());  // no file yet
  write_file(csv, header);
  CHECK_FALSE(half.due());
  write_file(csv, header + "0,one_cycle,1,1,0.5,0.5,0.4");  // a row still being written
  CHECK_FALSE(half.due());
  write_file(csv, header + "0,one_cycle,1,1,0.5,0.5,0.4\n");
  CHECK_FALSE(half.due());  // epoch 0 ended: due 0.2 s later
  CHECK_FALSE(whole.due());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(half.due());
  CHECK_FALSE(whole.due());
  write_file(csv, header + "0,one_cycle,1,1,0.5,0.5,0.4\n1,one_cycle,1,1,0.5,0.5,bad\n");
  CHECK(whole.due());  // a whole number: due at the epoch's end
}

TEST_CASE("a cut's time lost: both attempts' wall time less the run's training time",
          "[experiment][study]") {
  ltfit::RunCut cut;
  cut.cut_seconds = 50.0;
  cut.resume_seconds = 70.0;
  CHECK_FALSE(cut.time_lost(100.0));  // the cut never came
  cut.happened = true;
  CHECK(cut.time_lost(100.0) == 20.0);
  CHECK(cut.time_lost(130.0) == 0.0);  // never below 0
  CHECK_FALSE(cut.time_lost(std::nullopt));
}
