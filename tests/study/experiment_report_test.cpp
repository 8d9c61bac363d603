// The experiment report on fabricated run directories: rows read back, results.csv, report.md
// (statuses and reasons, the rehearsal label and estimates, study columns and speed-ups, mm:ss)
// and the charts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

#include "ltfit/config/config_loader.h"
#include "ltfit/study/experiment_report.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::RunOutcome;
using ltfit::RunStatus;
using ltfit::testing::read_file;
using ltfit::testing::write_file;

namespace {

ltfit::Config run_config(double subset) {
  ltfit::Config config;
  config.train.epochs = 3;
  config.data.batch_size = 16;
  config.train.precision = ltfit::Precision::kFp32;
  config.data.subset = subset;
  return config;
}

// A finished run: train 150 s + TTA 30 s, two epochs at 10 and 20 images/s.
RunOutcome fabricate_ok_run(const fs::path& dir, double subset, double train_seconds = 150.0) {
  write_file(dir / "config.yaml", ltfit::to_yaml(run_config(subset)));
  write_file(
      dir / "summary.json",
      "{\"train_seconds\": " + std::to_string(train_seconds) +
          ", \"tta_seconds\": 30.0, \"total_seconds\": " + std::to_string(train_seconds + 30.0) +
          ", \"accuracy\": 0.9, \"tta_accuracy\": 0.925, \"train_images\": 100, "
          "\"valid_images\": 50}\n");
  write_file(dir / "epochs.csv",
             "epoch,stage,train_loss,valid_loss,accuracy,error_rate,seconds,images_per_second,"
             "data_wait_seconds\n0,one_cycle,1,1,0.5,0.5,10,10.00,0\n"
             "1,one_cycle,1,1,0.5,0.5,10,20.00,0\n");
  write_file(dir / "steps.csv",
             "step,epoch,lr_0,lr_1,momentum,loss,loss_scale\n0,0,0.1,0.3,0.95,0.7,1\n"
             "1,0,0.2,0.5,0.9,0.6,1\n2,1,0.1,0.2,0.95,0.5,1\n");
  write_file(dir / "timing.json", "{\"peak_rss_bytes\": 1000, \"peak_gpu_bytes\": null}\n");
  RunOutcome outcome;
  outcome.id = "ok_run";
  outcome.label = "3 epochs, bs 16, fp32";
  outcome.study_run = "s1";
  outcome.status = RunStatus::kOk;
  outcome.exit_code = 0;
  outcome.run_dir = dir.string();
  return outcome;
}

std::vector<RunOutcome> fabricate_runs(const fs::path& root, double subset) {
  RunOutcome ok = fabricate_ok_run(root / "runs" / "ok_run", subset);
  RunOutcome failed;
  failed.id = "bad";
  failed.label = "bad run";
  failed.status = RunStatus::kFailed;
  failed.reason = "exit 2: data.batch_size: expected a positive integer";
  failed.exit_code = 2;
  failed.run_dir = (root / "runs" / "bad").string();
  RunOutcome na;
  na.id = "half";
  na.label = "fp16 run";
  na.study_run = "s1";
  na.status = RunStatus::kNotApplicable;
  na.reason = "train.precision: fp16 needs a CUDA device";
  na.run_dir = (root / "runs" / "half").string();
  na.config = run_config(subset);
  na.config->train.precision = ltfit::Precision::kFp16;
  return {ok, failed, na};
}

ltfit::ExperimentPlan study_plan() {
  ltfit::ExperimentPlan plan;
  plan.source = "plan.yaml";
  plan.name = "p";
  plan.base = "base.yaml";
  plan.study.source = "study.yaml";
  plan.study.title = "The study";
  plan.study.platforms = {{"a", "Alpha GPU", "", "", ""}, {"b", "Beta GPU", "", "", ""}};
  plan.study.runs = {{"s1", "s1", {{600.0, "10:00"}, {std::nullopt, "crashed: no shm"}}}};
  return plan;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    lines.push_back(text.substr(start, end - start));
  return lines;
}

using ltfit::testing::line_with;

}  // namespace

TEST_CASE("a run's row is read from its run directory", "[experiment]") {
  ltfit::testing::TempDir dir;
  const auto row = ltfit::read_experiment_row(fabricate_ok_run(dir.path() / "r", 0.25));
  CHECK(row.epochs == 3);
  CHECK(row.batch_size == 16);
  CHECK(row.precision == "fp32");
  CHECK(row.subset == 0.25);
  CHECK(row.total_seconds == Approx(180));
  CHECK(row.tta_seconds == Approx(30));
  CHECK(row.images_per_second == Approx(15));  // mean over epochs.csv
  CHECK(row.tta_accuracy == Approx(0.925));
  CHECK(row.peak_rss_bytes == 1000);
  CHECK_FALSE(row.peak_gpu_bytes.has_value());
  CHECK(row.estimated_total_seconds() == Approx(720));  // 180 / 0.25
}

TEST_CASE("a rehearsal report labels itself and its estimates", "[experiment]") {
  ltfit::testing::TempDir dir;
  const auto plan = study_plan();
  const auto rows = ltfit::write_experiment_report(
      dir.str(), plan, fabricate_runs(dir.path(), 0.25), {{{"data.subset", "0.25"}}, 125.0});
  REQUIRE(rows.size() == 3);

  const std::string csv = read_file(dir.path() / "results.csv");
  const auto csv_lines = lines_of(csv);
  REQUIRE(csv_lines.size() == 4);
  CHECK(csv_lines[1].rfind("ok_run,\"3 epochs, bs 16, fp32\",ok,,3,16,fp32,true,150,30,180,15,0.9,"
                           "0.925,1000,,",
                           0) == 0);
  CHECK_THAT(csv_lines[2], Contains("bad,bad run,failed,exit 2: data.batch_size"));
  CHECK_THAT(csv_lines[3], Contains("half,fp16 run,n/a,train.precision: fp16 needs a CUDA device"));
  CHECK_THAT(csv_lines[3], Contains(",fp16,"));  // settings of an n/a run: the resolved config
  CHECK_THAT(csv_lines[1], Contains(",0.25,720"));

  const std::string md = read_file(dir.path() / "report.md");
  CHECK_THAT(md, Contains("REHEARSAL") && Contains("estimate") && Contains("data.subset=0.25"));
  CHECK_THAT(md, Contains("env.json missing"));
  CHECK_THAT(md, Contains("the plan took 02:05"));
  const std::string ok = line_with(md, "| 3 epochs, bs 16, fp32 |");
  // train 02:30, TTA 00:30, total 03:00, 15 images/s, estimate 12:00, 600 s / 720 s = 0.83x.
  CHECK_THAT(ok, Contains("| ok | 02:30 | 00:30 | 03:00 | 15.0 | 90.00 % | 92.50 % |"));
  CHECK_THAT(ok, Contains("~12:00 (estimate)") && Contains("| 10:00 | 0.83× |") &&
                     Contains("| crashed: no shm | — |"));
  CHECK_THAT(line_with(md, "| bad run |"),
             Contains("**failed**: exit 2: data.batch_size: expected a positive integer"));
  CHECK_THAT(
      line_with(md, "| fp16 run |"),
      Contains("**n/a**: train.precision: fp16 needs a CUDA device") && Contains("| 10:00 | — |"));
  CHECK_THAT(line_with(md, "| run |"),
             Contains("Alpha GPU (study)") && Contains("speed-up vs Beta GPU (from estimate)"));

  CHECK(fs::file_size(dir.path() / "total_time.png") > 1000);
  CHECK(fs::file_size(dir.path() / "curves.png") > 1000);
}

TEST_CASE("a full-size report compares measured times and shows the machine", "[experiment]") {
  ltfit::testing::TempDir dir;
  auto outcomes = fabricate_runs(dir.path(), 1.0);
  // Over an hour: h:mm:ss; speed-up from the measured total.
  outcomes[0] = fabricate_ok_run(dir.path() / "runs" / "ok_run", 1.0, 3695.0);
  write_file(
      dir.path() / "runs" / "ok_run" / "env.json",
      "{\"cpu\": {\"model\": \"Test CPU\", \"physical_cores\": 2, \"logical_threads\": 4,"
      " \"available_cores\": 2}, \"memory\": {\"total_gib\": 23.54, \"available_gib\": 22.71,"
      " \"total_bytes\": 25276063744}, \"gpus\": [], \"driver_version\": \"none\","
      " \"libtorch_version\": \"2.15.0\", \"libtorch_cuda\": \"13.2\","
      " \"libtorch_cudnn\": \"9.26.0\", \"opencv_version\": \"4.6.0\","
      " \"shm\": {\"total_gib\": 23.54, \"free_gib\": 23.54, \"path\": \"/dev/shm\"}}");
  ltfit::write_experiment_report(dir.str(), study_plan(), outcomes, {});
  const std::string md = read_file(dir.path() / "report.md");
  CHECK_THAT(md, !Contains("REHEARSAL") && !Contains("estimate"));
  // "This machine": a short table of what matters for the timings, not every key of env.json.
  CHECK_THAT(md, Contains("| CPU | Test CPU |") &&
                     Contains("| cores | 2 physical, 4 threads, 2 available to ltfit |") &&
                     Contains("| memory | 23.5 GiB (22.7 GiB available) |") &&
                     Contains("| /dev/shm | 23.5 GiB (23.5 GiB free) |") &&
                     Contains("| GPU | none |") && Contains("| driver | — |") &&
                     Contains("| LibTorch | 2.15.0 (built with CUDA 13.2, cuDNN 9.26.0) |") &&
                     Contains("| OpenCV | 4.6.0 |"));
  CHECK_THAT(md, !Contains("total_bytes") && !Contains("- cpu."));
  const auto machine =
      md.substr(md.find("## This machine"), md.find("## Settings") - md.find("## This machine"));
  CHECK(std::count(machine.begin(), machine.end(), '\n') < 25);
  const std::string ok = line_with(md, "| 3 epochs, bs 16, fp32 |");
  CHECK_THAT(ok, Contains("| 1:01:35 | 00:30 | 1:02:05 |"));
  CHECK_THAT(ok, Contains("| 10:00 | 0.16× |"));  // 600 / 3725
  const std::string csv = read_file(dir.path() / "results.csv");
  CHECK_THAT(lines_of(csv)[1],
             Contains(",1,") && !Contains(",1,3725"));  // no estimate column value
}

TEST_CASE("the scaling section compares 2 and all GPUs with 1 GPU beside the published 1.8x",
          "[experiment][study]") {
  ltfit::testing::TempDir dir;
  auto plan = study_plan();
  plan.study.scaling = {{"Kaggle 2× Tesla T4", 2, 1.8, "a Kaggle guide", "MirroredStrategy"}};
  const auto gpu_run = [&](const std::string& id, ltfit::RunGpus gpus, double train_seconds) {
    RunOutcome o = fabricate_ok_run(dir.path() / "runs" / id, 1.0, train_seconds);
    o.id = id;
    o.label = "fp16 " + id;
    o.study_run.clear();
    o.gpus = gpus;
    o.machine_gpus = 4;
    return o;
  };
  std::vector<RunOutcome> outcomes = fabricate_runs(dir.path(), 1.0);  // no gpus: not in it
  outcomes.push_back(gpu_run("one", {true, false, 1}, 200.0));
  outcomes.push_back(gpu_run("two", {true, false, 2}, 110.0));
  outcomes.push_back(gpu_run("every", {true, true, 0}, 60.0));
  ltfit::write_experiment_report(dir.str(), plan, outcomes, {});
  const std::string md = read_file(dir.path() / "report.md");
  CHECK_THAT(md, Contains("- Published: Kaggle 2× Tesla T4 trains 1.80× as fast as one GPU "
                          "(a Kaggle guide; MirroredStrategy)."));
  CHECK_THAT(line_with(md, "| fp16 one | 1 |"),
             Contains("| ok | 03:20 |") && Contains("| 1.00× (baseline) | 100 % | — |"));
  // 200 / 110 = 1.82x, 91 % of 2; 200 / 60 = 3.33x, 83 % of 4.
  CHECK_THAT(line_with(md, "| fp16 two | 2 |"),
             Contains("| 01:50 |") && Contains("| 1.82× | 91 % | 1.80× (Kaggle 2× Tesla T4) |"));
  CHECK_THAT(line_with(md, "| fp16 every | all (4) |"), Contains("| 3.33× | 83 % | — |"));
  CHECK(line_with(md, "| 3 epochs, bs 16, fp32 | ").find("| 1 |") == std::string::npos);
  const std::string csv = read_file(dir.path() / "results.csv");
  CHECK_THAT(line_with(csv, "every,"), Contains(",all (4),"));

  // Without its 1-GPU time there is nothing to compare with: n/a, not a number.
  outcomes[3].status = RunStatus::kFailed;
  ltfit::write_experiment_report(dir.str(), plan, outcomes, {});
  CHECK_THAT(line_with(read_file(dir.path() / "report.md"), "| fp16 two | 2 |"),
             Contains("| n/a | n/a | 1.80×"));

  // A plan without gpus: rows has no scaling section.
  ltfit::write_experiment_report(dir.str(), plan, fabricate_runs(dir.path(), 1.0), {});
  CHECK_THAT(read_file(dir.path() / "report.md"), !Contains("Multi-GPU scaling"));
}

TEST_CASE("the machine table has a row per GPU with its memory in MiB and GiB", "[experiment]") {
  ltfit::testing::TempDir dir;
  auto outcomes = fabricate_runs(dir.path(), 1.0);
  write_file(dir.path() / "runs" / "ok_run" / "env.json",
             "{\"gpus\": [{\"index\": 0, \"name\": \"Tesla T4\", \"memory_mib\": 15360.0, "
             "\"memory_gib\": 15.0, \"compute_capability\": \"7.5\"}, {\"index\": 1, \"name\": "
             "\"Tesla T4\", \"memory_mib\": 15360.0, \"memory_gib\": 15.0}], "
             "\"driver_version\": \"550.54.15\", \"cuda_runtime\": \"12.4\"}");
  ltfit::write_experiment_report(dir.str(), study_plan(), outcomes, {});
  const std::string md = read_file(dir.path() / "report.md");
  CHECK_THAT(md, Contains("| GPU 0 | Tesla T4, 15360 MiB = 15.0 GiB, compute capability 7.5 |") &&
                     Contains("| GPU 1 | Tesla T4, 15360 MiB = 15.0 GiB, compute capability — |") &&
                     Contains("| driver | 550.54.15 |") && Contains("| CUDA runtime | 12.4 |") &&
                     Contains("| CPU | — |"));
}
