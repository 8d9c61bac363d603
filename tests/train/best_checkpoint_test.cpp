// best.ckpt follows train.best_monitor: the highest accuracy or the lowest validation loss, and a
// resumed writer compares with the best its checkpoint kept (hook state "best_checkpoint").
// best.ckpt is on disk before the checkpoint that records it as the best; a resume finds it
// missing, stale or ahead of the checkpoint it continues from and repairs it (issue 40).
#include <catch2/catch.hpp>

#include <filesystem>

#include "ltfit/model/arch_registry.h"
#include "ltfit/train/best_checkpoint.h"
#include "ltfit/train/checkpoint.h"
#include "ltfit/train/checkpoint_writer.h"
#include "ltfit/train/optimizer.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace fs = std::filesystem;

namespace {

struct Writer {
  Writer(const fs::path& dir, ltfit::Monitor monitor)
      : folder(dir),
        model(ltfit::make_classifier("resnet18", 2)),
        optimizer(ltfit::make_optimizer({}, model->layer_group_parameters())) {
    ltfit::CheckpointMeta base;
    base.config_yaml = "{}\n";
    base.classes = {"a", "b"};
    ltfit::CheckpointWriterOptions options;
    options.cadence.every_minutes = 0;
    options.best_monitor = monitor;
    writer.emplace(dir.string(), model, *optimizer, base, options);
  }
  // Ends an epoch with these figures; returns the epoch number best.ckpt then holds.
  int epoch(double loss, double accuracy, std::vector<ltfit::HookState> states = {}) {
    ++state.global_epoch;
    ++state.global_step;
    ltfit::EpochStats stats;
    stats.valid_loss = loss;
    stats.accuracy = accuracy;
    if (states.empty()) states.push_back(writer->save_state());
    writer->save(state, &stats, "epoch", nullptr, states);
    saved = states;
    return ltfit::read_checkpoint_meta((folder / "best.ckpt").string()).epochs_done;
  }

  fs::path folder;
  ltfit::Classifier model;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::optional<ltfit::CheckpointWriter> writer;
  ltfit::TrainState state;
  std::vector<ltfit::HookState> saved;
};

}  // namespace

TEST_CASE("best.ckpt keeps the epoch of the best monitored figure", "[train][checkpoint]") {
  ltfit::testing::TempDir dir;
  SECTION("accuracy, higher is better (the default)") {
    Writer w(dir.path() / "acc", ltfit::Monitor::kAccuracy);
    CHECK(w.epoch(1.0, 0.5) == 1);
    CHECK(w.epoch(0.5, 0.4) == 1);  // a lower loss does not count
    CHECK(w.epoch(2.0, 0.6) == 3);
    CHECK(w.writer->best_accuracy() == 0.6);
  }
  SECTION("valid_loss, lower is better") {
    Writer w(dir.path() / "loss", ltfit::Monitor::kValidLoss);
    CHECK(w.epoch(1.0, 0.5) == 1);
    CHECK(w.epoch(0.5, 0.4) == 2);
    CHECK(w.epoch(0.7, 0.9) == 2);            // a higher accuracy does not count
    CHECK(w.writer->best_accuracy() == 0.4);  // the accuracy of best.ckpt's epoch
    // The state written with epoch 3 holds the best so far (loss 0.5).
    const ltfit::HookState& own = w.saved.front();
    CHECK(own.name == "best_checkpoint");
    CHECK(own.scalars.at("value") == 0.5);

    // A resumed writer compares with that best: 0.6 is no better, 0.45 is.
    Writer resumed(dir.path() / "loss2", ltfit::Monitor::kValidLoss);
    resumed.writer->load_state(own);
    resumed.state.global_epoch = 3;
    resumed.epoch(0.1, 0.1);  // writes best.ckpt (epoch 4): any first epoch would without state
    Writer fresh(dir.path() / "loss3", ltfit::Monitor::kValidLoss);
    fresh.writer->load_state(own);
    fresh.state.global_epoch = 3;
    ltfit::EpochStats worse;
    worse.valid_loss = 0.6;
    fresh.state.global_epoch++;
    fresh.writer->save(fresh.state, &worse, "epoch", nullptr, {});
    CHECK_FALSE(fs::exists(dir.path() / "loss3" / "best.ckpt"));

    ltfit::HookState bad = own;
    bad.scalars.erase("value");
    CHECK_THROWS_AS(fresh.writer->load_state(bad), ltfit::CheckpointError);
  }
}

TEST_CASE("best.ckpt is in place before the checkpoint that records it as the best",
          "[train][checkpoint]") {
  ltfit::testing::TempDir dir;
  Writer w(dir.path(), ltfit::Monitor::kAccuracy);
  REQUIRE(w.epoch(1.0, 0.5) == 1);
  // best.ckpt cannot be replaced (a folder stands in its place), as when the disk fills up while
  // it is written: nothing may record epoch 2 as the best.
  fs::remove(dir.path() / "best.ckpt");
  fs::create_directories(dir.path() / "best.ckpt" / "x");
  CHECK_THROWS_AS(w.epoch(0.5, 0.7), ltfit::RuntimeError);
  const auto last = ltfit::read_checkpoint_meta((dir.path() / "last.ckpt").string());
  CHECK(last.epochs_done == 1);
  CHECK(last.best_accuracy == 0.5);
  CHECK_FALSE(fs::exists(dir.path() / "step-000000002.ckpt"));
}

TEST_CASE("a resume finds best.ckpt missing, stale or ahead and repairs it",
          "[train][checkpoint][resume]") {
  ltfit::testing::TempDir dir;
  const fs::path folder = dir.path() / "checkpoints";
  Writer w(folder, ltfit::Monitor::kAccuracy);
  const auto keep = [&](const char* from, const char* to) {
    fs::copy_file(folder / from, dir.path() / to);
  };
  REQUIRE(w.epoch(1.0, 0.5) == 1);
  keep("best.ckpt", "best1.ckpt");
  REQUIRE(w.epoch(0.9, 0.4) == 1);
  keep("last.ckpt", "last2.ckpt");
  REQUIRE(w.epoch(0.8, 0.6) == 3);
  const auto check = [&](const fs::path& resumed) {
    return ltfit::check_best_checkpoint(folder.string(), resumed.string(),
                                        ltfit::read_checkpoint_meta(resumed.string()), w.model,
                                        ltfit::Monitor::kAccuracy);
  };
  const fs::path best = folder / "best.ckpt";
  const auto best_meta = [&] { return ltfit::read_checkpoint_meta(best.string()); };
  const auto best_epoch = [](const ltfit::CheckpointMeta& meta) {
    for (const auto& state : meta.hook_states) {
      if (state.name == "best_checkpoint") return state.scalars.at("epoch");
    }
    return -1.0;
  };

  SECTION("best.ckpt holds the recorded best: nothing changes") {
    const auto written = fs::last_write_time(best);
    CHECK(check(folder / "last.ckpt").best_accuracy == 0.6);
    CHECK(fs::last_write_time(best) == written);
  }
  SECTION("missing, or an older epoch's, while last.ckpt ends the best epoch: written from it") {
    if (GENERATE(0, 1) == 0) {
      fs::remove(best);
    } else {
      fs::copy_file(dir.path() / "best1.ckpt", best, fs::copy_options::overwrite_existing);
    }
    const auto meta = check(folder / "last.ckpt");
    CHECK(meta.best_accuracy == 0.6);
    CHECK(best_epoch(meta) == 3.0);
    CHECK(best_meta().epochs_done == 3);
    CHECK(best_meta().accuracy == 0.6);
    CHECK(best_meta().weights_only);
  }
  SECTION("ahead of the checkpoint resumed from (a crash between the two writes)") {
    // last2.ckpt records epoch 1 (0.5) as the best, whose weights are gone; best.ckpt holds
    // epoch 3. Its own epoch 2 becomes the best, best.ckpt holds it.
    const auto meta = check(dir.path() / "last2.ckpt");
    CHECK(meta.best_accuracy == 0.4);
    CHECK(best_epoch(meta) == 2.0);
    CHECK(best_meta().epochs_done == 2);
    CHECK(best_meta().accuracy == 0.4);
  }
  SECTION("missing, resumed mid-epoch: the record is cleared, the next epoch writes best.ckpt") {
    w.state.position.batch_in_epoch = 3;
    ++w.state.global_step;
    w.writer->save(w.state, nullptr, "stop", nullptr, {w.writer->save_state()});
    fs::remove(best);
    const auto meta = check(folder / "last.ckpt");
    CHECK(meta.best_accuracy == -1.0);
    CHECK_FALSE(fs::exists(best));
    Writer resumed(folder, ltfit::Monitor::kAccuracy);
    for (const auto& state : meta.hook_states) {
      if (state.name == "best_checkpoint") resumed.writer->load_state(state);
    }
    resumed.state = w.state;
    resumed.state.position.batch_in_epoch = 0;
    CHECK(resumed.epoch(1.0, 0.1) == 4);  // worse than the lost best, but the one on disk
    CHECK(resumed.writer->best_accuracy() == 0.1);
  }
}
