// Runs that survive interruption: a run stopped mid-epoch (or at an epoch's end) and resumed
// from its checkpoint ends with the same weights and metrics as an uninterrupted run (CPU,
// run.deterministic); checkpoint retention; metrics files cut back on resume.
#include <torch/torch.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/hostile_images.h"
#include "ltfit/config/config_loader.h"
#include "ltfit/jobs/command_config.h"
#include "ltfit/jobs/resume.h"
#include "ltfit/jobs/train_job.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/model/model_factory.h"
#include "ltfit/train/checkpoint.h"
#include "ltfit/train/checkpoint_writer.h"
#include "ltfit/train/optimizer.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using ltfit::testing::TempDir;

namespace {

// Two stages (fine_tune: frozen, unfrozen), a fastai head with dropout (the RNG matters), 3
// steps per epoch.
ltfit::Config resume_config(const fs::path& data, const std::string& arch = "resnet18") {
  return ltfit::load_config_from_string(
      "run: {name: r, seed: 3, deterministic: true}\n"
      "data: {root: " +
          data.string() +
          ", image_size: 32, batch_size: 8, workers: 2}\n"
          "model: {arch: " +
          arch +
          ", pretrained: none, head: fastai}\n"
          "train: {recipe: fine_tune, freeze_epochs: 1, epochs: 2, lr: 2.0e-3, device: cpu,\n"
          "        checkpoint: {every_minutes: 0, keep: 2}}\n"
          "eval: {tta: false}\n",
      "resume_test.yaml");
}

std::vector<std::string> lines_of(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Column `column` of a CSV file, header excluded.
std::vector<std::string> csv_column(const fs::path& path, int column) {
  std::vector<std::string> values;
  const auto lines = lines_of(path);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    std::stringstream row(lines[i]);
    std::string cell;
    for (int c = 0; c <= column; ++c) std::getline(row, cell, ',');
    values.push_back(cell);
  }
  return values;
}

void check_same_weights(const ltfit::Config& config, const fs::path& a, const fs::path& b) {
  ltfit::Classifier ma = ltfit::build_model(config.model, 2);
  ltfit::Classifier mb = ltfit::build_model(config.model, 2);
  ltfit::load_checkpoint(a.string(), ma, nullptr);
  ltfit::load_checkpoint(b.string(), mb, nullptr);
  const auto pa = ma->named_parameters();
  const auto pb = mb->named_parameters();
  for (const auto& item : pa) {
    INFO(item.key());
    CHECK(torch::equal(item.value(), pb[item.key()]));
  }
  for (const auto& item : ma->named_buffers()) {
    INFO(item.key());
    CHECK(torch::equal(item.value(), *mb->named_buffers().find(item.key())));
  }
}

// Runs `config` into `run` until the stop signal's `stop_after`-th poll (InterruptedError);
// returns its last.ckpt.
fs::path cut_run(const ltfit::Config& config, const fs::path& run, int stop_after) {
  ltfit::TrainJobOptions cut;
  cut.run_dir = run.string();
  int polls = 0;
  cut.stop_signal = [&] { return ++polls >= stop_after; };
  CHECK_THROWS_AS(ltfit::run_train_job(config, cut), ltfit::InterruptedError);
  return run / "checkpoints" / "last.ckpt";
}

// Resumes the run of checkpoint `last` to its end.
ltfit::RunSummary resume_run(const ltfit::Config& config, const fs::path& last) {
  ltfit::TrainJobOptions resume;
  resume.resume = last.string();
  return ltfit::run_train_job(config, resume);
}

}  // namespace

TEST_CASE("interrupted and resumed runs end exactly like an uninterrupted one", "[train][resume]") {
  TempDir dir;
  ltfit::testing::write_small_synth(dir.path() / "data", 24, 8, 40, 60, /*seed=*/4);
  const ltfit::Config config = resume_config(dir.path() / "data");
  ltfit::TrainJobOptions whole;
  whole.run_dir = (dir.path() / "whole").string();
  const ltfit::RunSummary expected = ltfit::run_train_job(config, whole);
  REQUIRE(expected.epochs == 3);

  // Polls happen after every step (3 per epoch) and at every epoch end: stop after poll 2 is
  // mid-epoch 0 (frozen stage), after poll 8 is mid-epoch 1 (the unfrozen stage's first), after
  // poll 4 is at epoch 0's end.
  const int stop_after = GENERATE(2, 4, 8);
  INFO("stop after poll " << stop_after);
  const fs::path run = dir.path() / ("cut" + std::to_string(stop_after));
  const fs::path last = cut_run(config, run, stop_after);
  REQUIRE(fs::exists(last));
  const ltfit::CheckpointMeta meta = ltfit::read_checkpoint_meta(last.string());
  CHECK(meta.global_step > 0);
  CHECK(meta.global_step < 9);

  const ltfit::RunSummary resumed = resume_run(config, last);
  CHECK(resumed.run_dir == fs::absolute(run).string());
  CHECK(resumed.epochs == expected.epochs);
  CHECK(resumed.accuracy == expected.accuracy);
  CHECK(resumed.valid_loss == expected.valid_loss);
  check_same_weights(config, dir.path() / "whole" / "checkpoints" / "last.ckpt", last);
  // The metrics files hold each step and epoch once, with the uninterrupted run's values.
  CHECK(csv_column(run / "steps.csv", 0) == csv_column(dir.path() / "whole" / "steps.csv", 0));
  CHECK(csv_column(run / "steps.csv", 6) == csv_column(dir.path() / "whole" / "steps.csv", 6));
  CHECK(csv_column(run / "epochs.csv", 3) == csv_column(dir.path() / "whole" / "epochs.csv", 3));
}

TEST_CASE("a ConvNeXt or EfficientNet run resumed mid-epoch ends like an uninterrupted one",
          "[train][resume]") {
  // Stochastic depth draws from the same generators as dropout: the checkpoint's RNG state must
  // cover it for the resumed run to be exact.
  TempDir dir;
  ltfit::testing::write_small_synth(dir.path() / "data", 24, 8, 40, 60, /*seed=*/4);
  const std::string arch = GENERATE(as<std::string>{}, "convnext_tiny", "efficientnet_b0");
  INFO(arch);
  const ltfit::Config config = resume_config(dir.path() / "data", arch);
  ltfit::TrainJobOptions whole;
  whole.run_dir = (dir.path() / "whole").string();
  const ltfit::RunSummary expected = ltfit::run_train_job(config, whole);
  REQUIRE(expected.epochs == 3);
  const fs::path run = dir.path() / "cut";
  ltfit::TrainJobOptions cut;
  cut.run_dir = run.string();
  int polls = 0;
  cut.stop_signal = [&] { return ++polls >= 8; };  // mid-epoch 1, the unfrozen stage
  CHECK_THROWS_AS(ltfit::run_train_job(config, cut), ltfit::InterruptedError);
  const fs::path last = run / "checkpoints" / "last.ckpt";
  REQUIRE(fs::exists(last));
  ltfit::TrainJobOptions resume;
  resume.resume = last.string();
  const ltfit::RunSummary resumed = ltfit::run_train_job(config, resume);
  CHECK(resumed.accuracy == expected.accuracy);
  CHECK(resumed.valid_loss == expected.valid_loss);
  check_same_weights(config, dir.path() / "whole" / "checkpoints" / "last.ckpt", last);
  CHECK(csv_column(run / "steps.csv", 6) == csv_column(dir.path() / "whole" / "steps.csv", 6));
}

TEST_CASE("checkpoints: keep the newest N numbered files, last and best always loadable",
          "[train][resume]") {
  TempDir dir;
  ltfit::testing::write_small_synth(dir.path() / "data", 24, 8, 40, 60, /*seed=*/4);
  ltfit::Config config = resume_config(dir.path() / "data");
  config.train.checkpoint.every_minutes = 1e-6;  // a checkpoint after every step
  config.train.checkpoint.keep = 2;
  // The numbered files as the run leaves them while unfinished (a finished run keeps weights
  // only unless asked: finished_run_checkpoints_test).
  config.train.checkpoint.keep_resumable = true;
  ltfit::TrainJobOptions options;
  options.run_dir = (dir.path() / "run").string();
  ltfit::run_train_job(config, options);
  int numbered = 0;
  for (const auto& entry : fs::directory_iterator(dir.path() / "run" / "checkpoints")) {
    const std::string name = entry.path().filename().string();
    CHECK(name.find(".tmp") == std::string::npos);
    numbered += name.rfind("step-", 0) == 0 ? 1 : 0;
  }
  CHECK(numbered == 2);
  const auto last =
      ltfit::read_checkpoint_meta((dir.path() / "run/checkpoints/last.ckpt").string());
  CHECK(last.global_step == 9);
  CHECK(last.epochs_done == 3);
  CHECK(last.position.stage == 1);
  CHECK(last.position.epoch_in_stage == 2);
  const auto best =
      ltfit::read_checkpoint_meta((dir.path() / "run/checkpoints/best.ckpt").string());
  CHECK(best.accuracy == best.best_accuracy);
  CHECK(best.best_accuracy == last.best_accuracy);
  // timing.json: the profiled phases account for each epoch's wall time within a few percent.
  const auto timing =
      nlohmann::json::parse(ltfit::testing::read_file(dir.path() / "run" / "timing.json"));
  REQUIRE(timing["epochs"].size() == 3);
  for (const auto& epoch : timing["epochs"]) {
    double phases = 0;
    for (const auto& [name, seconds] : epoch["phases"].items()) phases += seconds.get<double>();
    const double wall = epoch["wall_seconds"].get<double>();
    CHECK(phases <= wall * 1.0001);
    CHECK(phases >= wall * 0.95);
    CHECK(epoch["phases"]["checkpoint"].get<double>() > 0);
  }
  CHECK(timing["total_seconds"].get<double>() >= timing["train_seconds"].get<double>());
}

TEST_CASE("a time limit stops the run in time with a checkpoint", "[train][resume]") {
  TempDir dir;
  ltfit::testing::write_small_synth(dir.path() / "data", 24, 8, 40, 60, /*seed=*/4);
  ltfit::Config config = resume_config(dir.path() / "data");
  config.train.epochs = 50;
  config.train.time_limit_seconds = 4.0;
  ltfit::TrainJobOptions options;
  options.run_dir = (dir.path() / "run").string();
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(ltfit::run_train_job(config, options), ltfit::InterruptedError);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(took < 4.0 + 2.0);  // the run's own clock starts a little after ours
  const auto meta =
      ltfit::read_checkpoint_meta((dir.path() / "run/checkpoints/last.ckpt").string());
  CHECK(meta.global_step > 0);
  CHECK(meta.epochs_done < 51);
}

TEST_CASE("best.ckpt is a weights-only file of its own, last.ckpt keeps the optimizer state",
          "[train][resume]") {
  TempDir dir;
  ltfit::testing::write_small_synth(dir.path() / "data", 24, 8, 40, 60, /*seed=*/4);
  ltfit::Config config = resume_config(dir.path() / "data");
  // last.ckpt as every save leaves it (a finished run drops its optimizer state unless asked:
  // finished_run_checkpoints_test).
  config.train.checkpoint.keep_resumable = true;
  ltfit::TrainJobOptions options;
  options.run_dir = (dir.path() / "run").string();
  ltfit::run_train_job(config, options);
  const fs::path checkpoints = dir.path() / "run" / "checkpoints";
  const auto best = ltfit::read_checkpoint_meta((checkpoints / "best.ckpt").string());
  const auto last = ltfit::read_checkpoint_meta((checkpoints / "last.ckpt").string());
  CHECK(best.weights_only);
  CHECK_FALSE(last.weights_only);
  CHECK(best.accuracy == best.best_accuracy);
  for (const auto& entry : fs::directory_iterator(checkpoints)) {
    if (entry.path().filename() == "best.ckpt") continue;
    CHECK_FALSE(fs::equivalent(entry.path(), checkpoints / "best.ckpt"));  // not a link
  }
  // The optimizer's state (AdamW: two moments per parameter) is most of a checkpoint.
  CHECK(fs::file_size(checkpoints / "best.ckpt") * 2 < fs::file_size(checkpoints / "last.ckpt"));
  // Evaluation reads it.
  ltfit::Classifier model = ltfit::build_model(config.model, 2);
  CHECK(ltfit::load_checkpoint((checkpoints / "best.ckpt").string(), model, nullptr).epochs_done ==
        best.epochs_done);
}

TEST_CASE("a save prunes only the numbered checkpoints it superseded", "[train][resume]") {
  TempDir dir;
  const fs::path checkpoints = dir.path() / "checkpoints";
  ltfit::testing::write_file(checkpoints / "step-000000099.ckpt", "another session's");
  ltfit::Classifier model = ltfit::make_classifier("resnet18", 2);
  auto optimizer = ltfit::make_optimizer({}, model->layer_group_parameters());
  ltfit::CheckpointWriterOptions options;
  options.cadence.keep = 2;
  ltfit::CheckpointWriter writer(checkpoints.string(), model, *optimizer, {}, options);
  for (std::int64_t step = 1; step <= 4; ++step) {
    ltfit::TrainState state;
    state.global_step = step;
    writer.save(state, nullptr, "periodic");
  }
  CHECK_FALSE(fs::exists(checkpoints / "step-000000001.ckpt"));
  CHECK_FALSE(fs::exists(checkpoints / "step-000000002.ckpt"));
  CHECK(fs::exists(checkpoints / "step-000000003.ckpt"));
  CHECK(fs::exists(checkpoints / "step-000000004.ckpt"));
  CHECK(fs::exists(checkpoints / "step-000000099.ckpt"));
  CHECK(ltfit::read_checkpoint_meta((checkpoints / "last.ckpt").string()).global_step == 4);
}

TEST_CASE("resume auto without last.ckpt continues from the newest numbered checkpoint",
          "[train][resume]") {
  TempDir dir;
  ltfit::testing::write_small_synth(dir.path() / "data", 24, 8, 40, 60, /*seed=*/4);
  ltfit::Config config = resume_config(dir.path() / "data");
  config.train.checkpoint.every_minutes = 1e-6;  // a checkpoint after every step
  ltfit::TrainJobOptions whole;
  whole.run_dir = (dir.path() / "whole").string();
  const ltfit::RunSummary expected = ltfit::run_train_job(config, whole);
  const fs::path run = dir.path() / "cut";
  ltfit::TrainJobOptions cut;
  cut.run_dir = run.string();
  int polls = 0;
  cut.stop_signal = [&] { return ++polls >= 8; };  // mid-epoch 1
  CHECK_THROWS_AS(ltfit::run_train_job(config, cut), ltfit::InterruptedError);
  const auto stopped = ltfit::read_checkpoint_meta((run / "checkpoints/last.ckpt").string());
  fs::remove(run / "checkpoints/last.ckpt");
  ltfit::TrainRequest request;
  request.resume = ltfit::parse_resume_request("auto");
  request.run_dir = run.string();
  const ltfit::ResolvedTrain resolved = ltfit::resolve_resume(request);
  REQUIRE(resolved.options.resume);
  CHECK(ltfit::read_checkpoint_meta(*resolved.options.resume).global_step == stopped.global_step);
  const ltfit::RunSummary resumed = ltfit::run_train_job(resolved.config, resolved.options);
  CHECK(resumed.accuracy == expected.accuracy);
  CHECK(resumed.valid_loss == expected.valid_loss);
  CHECK(csv_column(run / "steps.csv", 6) == csv_column(dir.path() / "whole" / "steps.csv", 6));
}

TEST_CASE("timing.json of a resumed run sums every session's phases", "[train][resume]") {
  TempDir dir;
  ltfit::testing::write_small_synth(dir.path() / "data", 24, 8, 40, 60, /*seed=*/4);
  const ltfit::Config config = resume_config(dir.path() / "data");
  const fs::path run = dir.path() / "run";
  ltfit::TrainJobOptions cut;
  cut.run_dir = run.string();
  int polls = 0;
  cut.stop_signal = [&] { return ++polls >= 8; };  // mid-epoch 1, after two epoch-end saves
  CHECK_THROWS_AS(ltfit::run_train_job(config, cut), ltfit::InterruptedError);
  const auto meta = ltfit::read_checkpoint_meta((run / "checkpoints/last.ckpt").string());
  const auto forward = static_cast<int>(ltfit::Phase::kForward);
  REQUIRE(meta.phase_seconds[forward] > 0);
  ltfit::TrainJobOptions resume;
  resume.resume = (run / "checkpoints/last.ckpt").string();
  ltfit::run_train_job(config, resume);
  const auto timing = nlohmann::json::parse(ltfit::testing::read_file(run / "timing.json"));
  double this_session = 0;  // the epochs this session ran
  for (const auto& epoch : timing["epochs"]) {
    this_session += epoch["phases"]["forward"].get<double>();
  }
  const double run_total = timing["phases"]["forward"].get<double>();
  CHECK(run_total >= meta.phase_seconds[forward] + this_session * 0.999);
  for (int i = 0; i < ltfit::kPhaseCount; ++i) {
    const char* name = ltfit::phase_name(static_cast<ltfit::Phase>(i));
    INFO(name);
    CHECK(timing["phases"][name].get<double>() >= meta.phase_seconds[i]);
  }
  double phases = 0;
  for (const auto& [name, seconds] : timing["phases"].items()) phases += seconds.get<double>();
  CHECK(phases <= timing["total_seconds"].get<double>());
}

TEST_CASE("images whose decoding fails leave the later epochs, and a resumed run plans the same",
          "[train][resume]") {
  TempDir dir;
  const auto samples =
      ltfit::testing::write_small_synth(dir.path() / "data", 24, 8, 40, 60, /*seed=*/4);
  ltfit::testing::write_small_synth(dir.path() / "clean", 24, 8, 40, 60, /*seed=*/4);
  // Sound headers without pixels: the header check keeps them, only decoding finds them out.
  const std::vector<std::int64_t> broken = {2, 9, 20};
  for (const std::int64_t i : broken) {
    const fs::path path = samples[static_cast<std::size_t>(i)].path;
    ltfit::testing::write_file(path, ltfit::testing::png_claiming(48, 48));
  }
  const ltfit::Config config = resume_config(dir.path() / "data");
  ltfit::TrainJobOptions whole;
  whole.run_dir = (dir.path() / "whole").string();
  const ltfit::RunSummary expected = ltfit::run_train_job(config, whole);
  REQUIRE(expected.epochs == 3);
  // Epoch 0: 24 planned, 3 batches of 8 (refilled); epochs 1 and 2: 21 planned, 2 batches.
  CHECK(expected.train_images == 21);
  CHECK(expected.train_skipped_images == 3);
  const std::vector<std::string> epochs = csv_column(dir.path() / "whole" / "steps.csv", 1);
  CHECK(epochs == std::vector<std::string>{"0", "0", "0", "1", "1", "2", "2"});
  const auto meta =
      ltfit::read_checkpoint_meta((dir.path() / "whole/checkpoints/last.ckpt").string());
  CHECK(meta.global_step == 7);
  CHECK(meta.decode_failures.found == broken);
  // The schedule still ends where it ends without broken images: the final learning rate.
  ltfit::Config clean = resume_config(dir.path() / "clean");
  ltfit::TrainJobOptions clean_run;
  clean_run.run_dir = (dir.path() / "clean-run").string();
  ltfit::run_train_job(clean, clean_run);
  for (const int lr_column : {2, 3, 4}) {
    INFO("steps.csv column " << lr_column);
    CHECK(csv_column(dir.path() / "whole" / "steps.csv", lr_column).back() ==
          csv_column(dir.path() / "clean-run" / "steps.csv", lr_column).back());
  }

  // Stopped mid-epoch 0 (some found, the rest still ahead), at its end, and mid-epoch 1
  // (planned without them): each resumed run ends like the uninterrupted one.
  const int stop_after = GENERATE(1, 2, 4, 5);
  INFO("stop after poll " << stop_after);
  const fs::path run = dir.path() / ("cut" + std::to_string(stop_after));
  ltfit::TrainJobOptions cut;
  cut.run_dir = run.string();
  int polls = 0;
  cut.stop_signal = [&] { return ++polls >= stop_after; };
  CHECK_THROWS_AS(ltfit::run_train_job(config, cut), ltfit::InterruptedError);
  const fs::path last = run / "checkpoints" / "last.ckpt";
  REQUIRE(fs::exists(last));
  ltfit::TrainJobOptions resume;
  resume.resume = last.string();
  const ltfit::RunSummary resumed = ltfit::run_train_job(config, resume);
  CHECK(resumed.train_images == 21);
  CHECK(resumed.accuracy == expected.accuracy);
  CHECK(resumed.valid_loss == expected.valid_loss);
  check_same_weights(config, dir.path() / "whole" / "checkpoints" / "last.ckpt", last);
  CHECK(csv_column(run / "steps.csv", 1) == epochs);
  CHECK(csv_column(run / "steps.csv", 6) == csv_column(dir.path() / "whole" / "steps.csv", 6));
  CHECK(ltfit::read_checkpoint_meta(last.string()).decode_failures.found == broken);
}

TEST_CASE(
    "with MixUp, CutMix, EMA, RandAugment, random erasing, label smoothing, class weights and a "
    "size "
    "schedule on, a resumed run ends exactly like an uninterrupted one",
    "[train][resume][mixup][ema]") {
  TempDir dir;
  ltfit::testing::write_small_synth(dir.path() / "data", 24, 8, 40, 60, /*seed=*/4);
  const ltfit::Config config = ltfit::load_config_from_string(
      ltfit::to_yaml(resume_config(dir.path() / "data")), "x.yaml",
      ltfit::parse_cli_overrides(
          {"train.mixup.mixup_alpha=0.4", "train.mixup.cutmix_alpha=1.0", "train.mixup.mode=elem",
           "train.ema.decay=0.9", "train.ema.warmup=true", "train.label_smoothing=0.1",
           "train.class_weights=balanced", "data.augment.random_erasing.p=0.5",
           "data.augment.policy=rand_augment", "data.size_schedule=[[0, 32], [2, 40]]"}));
  ltfit::TrainJobOptions whole;
  whole.run_dir = (dir.path() / "whole").string();
  const ltfit::RunSummary expected = ltfit::run_train_job(config, whole);
  REQUIRE(expected.epochs == 3);
  CHECK(expected.weights == "ema");
  const fs::path whole_last = dir.path() / "whole" / "checkpoints" / "last.ckpt";
  const ltfit::CheckpointMeta whole_meta = ltfit::read_checkpoint_meta(whole_last.string());
  const ltfit::HookState* whole_ema = nullptr;
  for (const auto& s : whole_meta.hook_states) {
    if (s.name == "ema") whole_ema = &s;
  }
  REQUIRE(whole_ema != nullptr);

  // The image size switches at epoch 2: poll 8 stops before it (mid-epoch 1, the unfrozen
  // stage's first), poll 10 after it (mid-epoch 2). The plain test above covers poll 2.
  CHECK(csv_column(dir.path() / "whole" / "epochs.csv", 9) ==
        std::vector<std::string>{"32", "32", "40"});
  const int stop_after = GENERATE(8, 10);
  INFO("stop after poll " << stop_after);
  const fs::path run = dir.path() / ("cut" + std::to_string(stop_after));
  const fs::path last = cut_run(config, run, stop_after);
  const ltfit::RunSummary resumed = resume_run(config, last);
  CHECK(resumed.accuracy == expected.accuracy);
  CHECK(resumed.valid_loss == expected.valid_loss);
  check_same_weights(config, whole_last, last);
  const ltfit::CheckpointMeta meta = ltfit::read_checkpoint_meta(last.string());
  bool found = false;
  for (const auto& s : meta.hook_states) {
    if (s.name != "ema") continue;
    found = true;
    REQUIRE(s.tensors.size() == whole_ema->tensors.size());
    for (const auto& [name, value] : s.tensors) {
      INFO(name);
      CHECK(torch::equal(value, whole_ema->tensors.at(name)));
    }
  }
  CHECK(found);
}

TEST_CASE("early stopping ends the run at an epoch end, says why, and a resume keeps it stopped",
          "[train][resume][early_stopping]") {
  TempDir dir;
  ltfit::testing::write_small_synth(dir.path() / "data", 24, 8, 40, 60, /*seed=*/4);
  // min_delta 1e6: only the first epoch of a stage can improve, so the unfrozen stage's second
  // epoch stops the run: 3 epochs of the 4 planned.
  const ltfit::Config config = ltfit::load_config_from_string(
      ltfit::to_yaml(resume_config(dir.path() / "data")), "x.yaml",
      ltfit::parse_cli_overrides({"train.epochs=3", "train.early_stopping.patience=1",
                                  "train.early_stopping.min_delta=1000000"}));
  ltfit::TrainJobOptions options;
  options.run_dir = (dir.path() / "run").string();
  const ltfit::RunSummary summary = ltfit::run_train_job(config, options);
  CHECK(summary.epochs == 3);
  CHECK_THAT(summary.stopped_early, Catch::Contains("no improvement of valid_loss"));
  const auto json =
      nlohmann::json::parse(ltfit::testing::read_file(dir.path() / "run" / "summary.json"));
  CHECK(json["stopped_early"].get<std::string>() == summary.stopped_early);
  CHECK(fs::exists(dir.path() / "run" / "checkpoints" / "best.ckpt"));
  ltfit::TrainRequest request;
  request.resume = ltfit::parse_resume_request("auto");
  request.run_dir = (dir.path() / "run").string();
  const ltfit::ResolvedTrain resolved = ltfit::resolve_resume(request);
  CHECK(resolved.completed_summary.has_value());  // the run is complete
}
