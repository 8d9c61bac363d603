// Early stopping (train/early_stopping.h): fastai's EarlyStoppingCallback rules, its state across
// a resume, and a stopped run staying stopped.
#include "ltfit/train/early_stopping.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "ltfit/model/arch_registry.h"
#include "ltfit/train/optimizer.h"
#include "ltfit/util/error.h"

namespace {

// Feeds a hook one epoch figure after another, as the Trainer does at epoch ends.
class Epochs {
 public:
  Epochs()
      : model_(ltfit::make_classifier("resnet18", 2)),
        optimizer_(ltfit::make_optimizer({}, model_->layer_group_parameters())),
        profiler_(torch::kCPU, false),
        ctx_(model_, *optimizer_, scaler_, profiler_, state_, torch::kCPU, torch::kFloat) {}

  void begin_stage(ltfit::Hook& hook, int stage) {
    state_.position.stage = stage;
    ctx_.stop = false;
    hook.stage_begin(ctx_);
  }
  // The epoch's valid_loss and accuracy; returns whether the hook stopped the fit.
  bool end_epoch(ltfit::Hook& hook, double loss, double accuracy) {
    epoch_.valid_loss = loss;
    epoch_.accuracy = accuracy;
    ++state_.global_epoch;
    ctx_.epoch = &epoch_;
    hook.epoch_end(ctx_);
    return ctx_.stop;
  }
  bool stopped() const { return ctx_.stop; }

 private:
  ltfit::Classifier model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  ltfit::GradScaler scaler_;
  ltfit::Profiler profiler_;
  ltfit::TrainState state_;
  ltfit::TrainContext ctx_;
  ltfit::EpochStats epoch_;
};

ltfit::EarlyStoppingConfig stopping(ltfit::Monitor monitor, int patience, double min_delta = 0) {
  ltfit::EarlyStoppingConfig c;
  c.monitor = monitor;
  c.patience = patience;
  c.min_delta = min_delta;
  return c;
}

}  // namespace

TEST_CASE("early stopping counts epochs without improvement of the monitored figure",
          "[train][early_stopping]") {
  SECTION("valid_loss: lower is better, by more than min_delta") {
    ltfit::EarlyStoppingHook hook(stopping(ltfit::Monitor::kValidLoss, 2, 0.01));
    Epochs e;
    e.begin_stage(hook, 0);
    CHECK_FALSE(e.end_epoch(hook, 1.0, 0.5));    // best 1.0
    CHECK_FALSE(e.end_epoch(hook, 0.995, 0.5));  // not by more than 0.01: wait 1
    CHECK_FALSE(e.end_epoch(hook, 0.9, 0.5));    // best 0.9, wait 0
    CHECK_FALSE(e.end_epoch(hook, 0.95, 0.5));   // wait 1
    CHECK(e.end_epoch(hook, 0.891, 0.5));        // wait 2: stop
    CHECK_THAT(hook.reason(), Catch::Contains("no improvement of valid_loss for 2 epoch(s)"));
    // The fifth epoch, numbered 4 as epochs.csv and the progress table number it.
    CHECK_THAT(hook.reason(), Catch::Contains("after epoch 4 (counted from 0"));
    CHECK(hook.save_state().scalars.at("stopped") == 1.0);
  }
  SECTION("accuracy: higher is better") {
    ltfit::EarlyStoppingHook hook(stopping(ltfit::Monitor::kAccuracy, 1));
    Epochs e;
    e.begin_stage(hook, 0);
    CHECK_FALSE(e.end_epoch(hook, 9.0, 0.6));
    CHECK_FALSE(e.end_epoch(hook, 9.0, 0.7));
    CHECK(e.end_epoch(hook, 0.1, 0.7));  // equal is no improvement
  }
  SECTION("each stage starts afresh, as fastai's reset_on_fit") {
    ltfit::EarlyStoppingHook hook(stopping(ltfit::Monitor::kValidLoss, 2));
    Epochs e;
    e.begin_stage(hook, 0);
    CHECK_FALSE(e.end_epoch(hook, 0.5, 0.5));
    CHECK_FALSE(e.end_epoch(hook, 0.6, 0.5));  // wait 1
    e.begin_stage(hook, 1);
    CHECK_FALSE(e.end_epoch(hook, 0.7, 0.5));  // a new best in the new stage
    CHECK_FALSE(e.end_epoch(hook, 0.8, 0.5));  // wait 1
    CHECK(e.end_epoch(hook, 0.8, 0.5));
  }
  CHECK_THROWS_AS(ltfit::EarlyStoppingHook(stopping(ltfit::Monitor::kValidLoss, 0)),
                  ltfit::ConfigError);
}

TEST_CASE("early stopping's state resumes mid-stage, and a stopped run stays stopped",
          "[train][early_stopping]") {
  const auto config = stopping(ltfit::Monitor::kValidLoss, 2);
  ltfit::EarlyStoppingHook first(config);
  Epochs e;
  e.begin_stage(first, 0);
  CHECK_FALSE(e.end_epoch(first, 0.5, 0.5));
  CHECK_FALSE(e.end_epoch(first, 0.6, 0.5));  // wait 1
  const ltfit::HookState saved = first.save_state();

  ltfit::EarlyStoppingHook resumed(config);
  resumed.load_state(saved);
  Epochs r;
  r.begin_stage(resumed, 0);
  CHECK(r.end_epoch(resumed, 0.6, 0.5));  // the uninterrupted run's second bad epoch

  // A state from a fresh stage (no epoch ended yet: no best) keeps the file finite.
  ltfit::EarlyStoppingHook fresh(config);
  Epochs f;
  f.begin_stage(fresh, 0);
  const ltfit::HookState empty = fresh.save_state();
  CHECK(empty.scalars.at("has_best") == 0.0);
  CHECK(std::isfinite(empty.scalars.at("best")));

  ltfit::EarlyStoppingHook after_stop(config);
  after_stop.load_state(resumed.save_state());
  Epochs s;
  s.begin_stage(after_stop, 0);
  CHECK(s.stopped());  // nothing more is trained
  CHECK(ltfit::stopped_early({resumed.save_state()}));
  CHECK_FALSE(ltfit::stopped_early({saved}));

  ltfit::HookState bad = saved;
  bad.scalars.erase("wait");
  CHECK_THROWS_AS(resumed.load_state(bad), ltfit::CheckpointError);
  bad = saved;
  bad.version = 2;
  CHECK_THROWS_AS(resumed.load_state(bad), ltfit::CheckpointError);
  bad = saved;
  bad.scalars["best"] = NAN;
  CHECK_THROWS_AS(resumed.load_state(bad), ltfit::CheckpointError);
}
