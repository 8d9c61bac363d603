// best.ckpt follows train.best_monitor: the highest accuracy or the lowest validation loss, and a
// resumed writer compares with the best its checkpoint kept (hook state "best_checkpoint").
#include <catch2/catch.hpp>

#include <filesystem>

#include "ltfit/model/arch_registry.h"
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
