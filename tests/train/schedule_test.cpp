// LR schedules (schedule.h) against the code they follow, and the plateau schedule's state across
// a resume. The reference values were printed by the anchors' own code (timm 1.0.31's
// CosineLRScheduler with t_in_epochs=False stepped by step_update; torch 2.15's MultiStepLR and
// ReduceLROnPlateau; fastai 2.8.12's combined_cos, from fastai/callback/schedule.py).
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <vector>

#include "ltfit/model/arch_registry.h"
#include "ltfit/train/one_cycle.h"
#include "ltfit/train/optimizer.h"
#include "ltfit/train/schedule.h"
#include "ltfit/train/standard_hooks.h"
#include "ltfit/train/trainer.h"
#include "ltfit/util/error.h"

namespace {

std::vector<double> lrs_of(const ltfit::ScheduleConfig& config, double peak, std::int64_t total,
                           std::int64_t per_epoch) {
  const auto schedule = ltfit::make_schedule(config, total, per_epoch);
  std::vector<double> out;
  for (std::int64_t s = 0; s < total; ++s) out.push_back(schedule->lr(peak, s));
  return out;
}

void check_close(const std::vector<double>& got, const std::vector<double>& want,
                 double relative = 1e-12) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("step " << i);
    CHECK(got[i] == Approx(want[i]).epsilon(relative).margin(1e-15));
  }
}

// Serves `batches` copies of one random batch per epoch.
class RepeatedBatch : public ltfit::BatchSource {
 public:
  explicit RepeatedBatch(int batches) : batches_(batches) {
    torch::manual_seed(11);
    batch_.images = torch::randint(256, {2, 32, 32, 3}, torch::kUInt8);
    batch_.labels = torch::tensor({0, 1}, torch::kLong);
  }
  void start_epoch(int /*epoch*/, std::int64_t skip) override { next_ = skip; }
  std::optional<ltfit::Batch> next() override {
    if (next_ >= batches_) return std::nullopt;
    ++next_;
    return batch_;
  }
  std::int64_t batches_per_epoch() const override { return batches_; }

 private:
  int batches_;
  std::int64_t next_ = 0;
  ltfit::Batch batch_;
};

// Stands in for validation: each epoch end reports the next scripted validation loss (runs
// before the schedule hook), and records each epoch's LR and the hook states after the schedule.
struct ScriptedValidation : ltfit::Hook {
  explicit ScriptedValidation(std::vector<double> losses) : losses_(std::move(losses)) {}
  int order() const override { return ltfit::hook_order::kSchedule - 1; }
  void epoch_begin(ltfit::TrainContext& /*ctx*/) override { epoch_lr.reset(); }
  void after_step(ltfit::TrainContext& ctx) override {
    if (!epoch_lr) epoch_lr = ctx.lrs.at(0);
  }
  void epoch_end(ltfit::TrainContext& ctx) override {
    lrs.push_back(*epoch_lr);
    stats_ = *ctx.epoch;
    stats_.valid_loss = losses_.at(static_cast<std::size_t>(ctx.state.global_epoch - 1));
    ctx.epoch = &stats_;
    ctx.valid_accuracy = 0.5;
  }
  std::vector<double> lrs;  // the LR of each epoch's first step
  std::optional<double> epoch_lr;

 private:
  std::vector<double> losses_;
  ltfit::EpochStats stats_;
};

// Keeps what a checkpoint would save at each epoch end (after the schedule updated).
struct StateTap : ltfit::Hook {
  int order() const override { return ltfit::hook_order::kCheckpoint; }
  void epoch_end(ltfit::TrainContext& ctx) override { saved.push_back(ctx.hook_states()); }
  std::vector<std::vector<ltfit::HookState>> saved;
};

const std::vector<double> kPlateauLosses{1.0,  0.9,  0.95, 0.96, 0.97, 0.89995,
                                         0.85, 0.86, 0.87, 0.88, 0.89, 0.9};

ltfit::StagePlan plateau_stage() {
  ltfit::StagePlan stage;
  stage.name = "one_cycle";
  stage.epochs = static_cast<int>(kPlateauLosses.size());
  stage.group_lrs = {0.01, 0.01, 0.01};
  stage.schedule.schedule = ltfit::ScheduleKind::kPlateau;
  stage.schedule.decay_rate = 0.5;
  stage.schedule.patience_epochs = 1;
  stage.schedule.cooldown_epochs = 1;
  stage.schedule.min_lr = 1.5e-3;
  return stage;
}

}  // namespace

TEST_CASE("cosine with warm-up is timm's CosineLRScheduler stepped per update",
          "[train][schedule]") {
  ltfit::ScheduleConfig c;
  c.schedule = ltfit::ScheduleKind::kCosine;
  c.warmup_epochs = 1;  // 4 steps
  c.warmup_lr = 1e-5;
  c.min_lr = 1e-4;
  // CosineLRScheduler(opt(lr=0.01), t_initial=20, lr_min=1e-4, warmup_t=4, warmup_lr_init=1e-5,
  // t_in_epochs=False): the LR of each of 20 updates.
  check_close(lrs_of(c, 0.01, 20, 4), {1e-05,
                                       0.0025075,
                                       0.005005,
                                       0.0075025000000000005,
                                       0.00905463412215599,
                                       0.00855017856687341,
                                       0.007959536998847742,
                                       0.007297252973710758,
                                       0.006579634122155991,
                                       0.005824350601949144,
                                       0.005050000000000001,
                                       0.004275649398050859,
                                       0.0035203658778440107,
                                       0.0028027470262892437,
                                       0.0021404630011522584,
                                       0.0015498214331265902,
                                       0.0010453658778440107,
                                       0.0006395177052675795,
                                       0.00034227024433899005,
                                       0.0001609427140540686});
  const auto schedule = ltfit::make_schedule(c, 20, 4);
  CHECK(schedule->momentum(7) == Approx(0.9));  // not scheduled: the optimizer's betas[0]
}

TEST_CASE("multistep is torch's MultiStepLR, flat_cos is fastai v2's combined_cos",
          "[train][schedule]") {
  ltfit::ScheduleConfig m;
  m.schedule = ltfit::ScheduleKind::kMultistep;
  m.decay_milestones = {2, 4};
  m.decay_rate = 0.1;
  // MultiStepLR(milestones=[2, 4], gamma=0.1), 6 epochs of 3 steps.
  std::vector<double> want;
  for (const double lr : {0.01, 0.01, 0.001, 0.001, 0.0001, 0.0001}) want.insert(want.end(), 3, lr);
  check_close(lrs_of(m, 0.01, 18, 3), want);

  ltfit::ScheduleConfig f;
  f.schedule = ltfit::ScheduleKind::kFlatCos;  // pct_start 0.75, div_final 1e5: fit_flat_cos's
  // combined_cos(0.75, 0.01, 0.01, 0.01 / 1e5) at pos = step / 12. fastai computes the phase
  // position in float32 (combine_scheds' tensors): 1e-6 relative; ltfit's is double.
  check_close(lrs_of(f, 0.01, 12, 4),
              {0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.0075000260810977794,
               0.002500073918902221},
              1e-6);

  ltfit::ScheduleConfig k;
  k.schedule = ltfit::ScheduleKind::kConstant;
  k.warmup_epochs = 0.5;  // 2 steps of 4
  k.warmup_lr = 0.0;
  check_close(lrs_of(k, 0.02, 6, 4), {0.0, 0.01, 0.02, 0.02, 0.02, 0.02});
}

TEST_CASE("one_cycle through the interface is one_cycle.h's, momentum included",
          "[train][schedule]") {
  ltfit::ScheduleConfig c;  // one_cycle, fastai's defaults
  const auto schedule = ltfit::make_schedule(c, 10, 5);
  const ltfit::OneCycleSchedule direct{10, 3e-3, 0.3, 25.0, 1e5, 0.95, 0.85, 0.95};
  for (std::int64_t s = 0; s < 10; ++s) {
    CHECK(schedule->lr(3e-3, s) == ltfit::lr_at(direct, s));
    CHECK(schedule->momentum(s) == ltfit::momentum_at(direct, s));
  }
}

TEST_CASE("plateau follows torch's ReduceLROnPlateau and keeps its state across a resume",
          "[train][schedule][resume]") {
  // ReduceLROnPlateau(factor=0.5, patience=1, cooldown=1, min_lr=1.5e-3) stepped with these
  // losses: the LR after each step, i.e. of the next epoch.
  const std::vector<double> torch_after{0.01,  0.01,  0.01,   0.005,  0.005,  0.005,
                                        0.005, 0.005, 0.0025, 0.0025, 0.0025, 0.0015};
  std::vector<double> want{0.01};
  want.insert(want.end(), torch_after.begin(), torch_after.end() - 1);
  const ltfit::StagePlan stage = plateau_stage();

  RepeatedBatch data(2);
  torch::manual_seed(3);
  ltfit::Classifier model = ltfit::make_classifier("resnet18", 2);
  auto optimizer = ltfit::make_optimizer({}, model->layer_group_parameters());
  ltfit::ScheduleHook schedule;
  ScriptedValidation validation(kPlateauLosses);
  StateTap tap;
  ltfit::Trainer whole(model, *optimizer, data, nullptr, {}, {&schedule, &validation, &tap});
  whole.fit({stage});
  check_close(validation.lrs, want);

  // Continue a fresh trainer from after epoch 7, as a resume does: the saved counters carry on
  // (without them the LR would climb back to 0.01 and decay later).
  constexpr int kDone = 7;
  REQUIRE(tap.saved.size() == kPlateauLosses.size());
  const std::vector<ltfit::HookState>& saved = tap.saved[kDone - 1];
  REQUIRE(saved.size() == 1);
  CHECK(saved[0].name == "schedule");
  CHECK(saved[0].scalars.at("decays") == 1.0);
  ltfit::TrainState start;
  start.position.epoch_in_stage = kDone;
  start.global_epoch = kDone;
  start.global_step = kDone * 2;
  start.hook_states = saved;
  ltfit::ScheduleHook resumed_schedule;
  ScriptedValidation resumed_validation(kPlateauLosses);
  ltfit::Trainer resumed(model, *optimizer, data, nullptr, {},
                         {&resumed_schedule, &resumed_validation});
  resumed.fit({stage}, start);
  check_close(resumed_validation.lrs, std::vector<double>(want.begin() + kDone, want.end()));

  // A state saved in another stage is not this stage's: it starts afresh.
  std::vector<ltfit::HookState> other = saved;
  other[0].scalars["stage"] = 1;
  start.hook_states = other;
  ltfit::ScheduleHook fresh_schedule;
  ScriptedValidation fresh_validation(kPlateauLosses);
  ltfit::Trainer fresh(model, *optimizer, data, nullptr, {}, {&fresh_schedule, &fresh_validation});
  fresh.fit({stage}, start);
  CHECK(fresh_validation.lrs.front() == Approx(0.01));
}

TEST_CASE("hook states: a record no hook claims is ignored, a bad one is refused",
          "[train][schedule][checkpoint]") {
  RepeatedBatch data(1);
  torch::manual_seed(3);
  ltfit::Classifier model = ltfit::make_classifier("resnet18", 2);
  auto optimizer = ltfit::make_optimizer({}, model->layer_group_parameters());
  ltfit::StagePlan stage = plateau_stage();
  stage.epochs = 1;
  ltfit::TrainState start;
  start.hook_states = {{"ema", 1, {{"w", torch::ones({2})}}, {}}};
  ltfit::ScheduleHook schedule;
  ltfit::Trainer trainer(model, *optimizer, data, nullptr, {}, {&schedule});
  CHECK_NOTHROW(trainer.fit({stage}, start));

  start.hook_states = {{"schedule", 2, {}, {{"stage", 0}}}};
  ltfit::ScheduleHook newer;
  ltfit::Trainer from_newer(model, *optimizer, data, nullptr, {}, {&newer});
  CHECK_THROWS_AS(from_newer.fit({stage}, start), ltfit::CheckpointError);

  start.hook_states = {{"schedule", 1, {}, {{"stage", 0}, {"best", 1.0}, {"decays", -3}}}};
  ltfit::ScheduleHook corrupt;
  ltfit::Trainer from_corrupt(model, *optimizer, data, nullptr, {}, {&corrupt});
  CHECK_THROWS_AS(from_corrupt.fit({stage}, start), ltfit::CheckpointError);

  ltfit::ScheduleHook a, b;
  CHECK_THROWS_AS(ltfit::Trainer(model, *optimizer, data, nullptr, {}, {&a, &b}),
                  ltfit::RuntimeError);
}
