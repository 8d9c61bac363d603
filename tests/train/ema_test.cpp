// The weights' moving average (train/ema.h): timm's ModelEmaV3 after each optimizer step, the
// averaged weights swapped in for validation, kept as hook state. "[timm_oracle]" (run by
// tests/train/timm_oracle.sh, skipped visibly without timm) compares with timm's own code.
#include "ltfit/train/ema.h"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "ltfit/data/loader.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/train/optimizer.h"
#include "ltfit/train/trainer.h"
#include "ltfit/util/error.h"
#include "model/archive_builders.h"
#include "support/test_support.h"

namespace {

ltfit::EmaConfig ema_config(double decay, bool warmup, bool validate = true) {
  ltfit::EmaConfig c;
  c.decay = decay;
  c.warmup = warmup;
  c.validate = validate;
  return c;
}

// Two batches of random images, the same every epoch.
class TwoBatches : public ltfit::BatchSource {
 public:
  TwoBatches() {
    torch::manual_seed(5);
    for (int b = 0; b < 2; ++b) {
      batches_.push_back({torch::randint(256, {4, 32, 32, 3}, torch::kUInt8),
                          torch::randint(2, {4}, torch::kLong),
                          {}});
    }
  }
  void start_epoch(int /*epoch*/, std::int64_t skip) override { next_ = skip; }
  std::optional<ltfit::Batch> next() override {
    if (next_ >= 2) return std::nullopt;
    return batches_[static_cast<std::size_t>(next_++)];
  }
  std::int64_t batches_per_epoch() const override { return 2; }

 private:
  std::vector<ltfit::Batch> batches_;
  std::int64_t next_ = 0;
};

std::vector<torch::Tensor> snapshot(ltfit::Classifier& model) {
  std::vector<torch::Tensor> out;
  for (auto& [name, value] : ltfit::model_state(model)) out.push_back(value.detach().clone());
  return out;
}

}  // namespace

TEST_CASE("EMA decay: 0 at the first update, then decay, and ModelEmaV3's warm-up", "[ema]") {
  const ltfit::EmaConfig plain = ema_config(0.99, false);
  CHECK(ltfit::ema_decay(plain, 1) == 0.0);
  CHECK(ltfit::ema_decay(plain, 2) == 0.99);
  CHECK(ltfit::ema_decay(plain, 1000) == 0.99);
  const ltfit::EmaConfig warm = ema_config(0.99, true);
  CHECK(ltfit::ema_decay(warm, 1) == 0.0);
  CHECK(ltfit::ema_decay(warm, 2) == Approx(1.0 - std::pow(2.0, -2.0 / 3.0)));
  CHECK(ltfit::ema_decay(warm, 11) == Approx(1.0 - std::pow(11.0, -2.0 / 3.0)));
  CHECK(ltfit::ema_decay(warm, 1000000) == 0.99);  // capped at decay
}

TEST_CASE("the EMA hook averages after each step, swaps the average in for validation and back",
          "[ema]") {
  torch::manual_seed(3);
  ltfit::Classifier model = ltfit::make_classifier("resnet18", 2);
  auto optimizer = ltfit::make_optimizer({}, model->layer_group_parameters());
  ltfit::set_hyper_parameters(*optimizer, {1e-3, 1e-3, 1e-3}, 0.9);
  const ltfit::EmaConfig config = ema_config(0.5, true);
  ltfit::EmaHook ema(config);
  // Follows the recurrence by hand from the weights after each step.
  struct Follow : ltfit::Hook {
    explicit Follow(const ltfit::EmaConfig& c) : config(c) {}
    int order() const override { return ltfit::hook_order::kEma + 1; }
    void fit_begin(ltfit::TrainContext& ctx) override { expected = snapshot(ctx.model); }
    void after_step(ltfit::TrainContext& ctx) override {
      const double d = ltfit::ema_decay(config, ctx.state.global_step);
      const auto now = snapshot(ctx.model);
      for (std::size_t i = 0; i < now.size(); ++i) {
        expected[i] = now[i].is_floating_point() ? expected[i] * d + now[i] * (1 - d) : now[i];
      }
    }
    ltfit::EmaConfig config;
    std::vector<torch::Tensor> expected;
  } follow(config);
  TwoBatches data;
  ltfit::StagePlan stage;
  stage.name = "test";
  stage.epochs = 2;
  ltfit::Trainer trainer(model, *optimizer, data, nullptr, {}, {&ema, &follow});
  trainer.fit({stage});
  REQUIRE(trainer.state().global_step == 4);

  const ltfit::HookState saved = ema.save_state();
  CHECK(saved.name == "ema");
  const auto names = ltfit::model_state(model);
  REQUIRE(saved.tensors.size() == names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    INFO(names[i].first);
    const torch::Tensor& got = saved.tensors.at(names[i].first);
    CHECK(
        torch::allclose(got.to(torch::kDouble), follow.expected[i].to(torch::kDouble), 1e-6, 1e-7));
  }
  // Validation: the average in, the trained weights back after.
  const auto trained = snapshot(model);
  ltfit::GradScaler scaler;
  ltfit::Profiler profiler(torch::kCPU, false);
  ltfit::TrainState state;
  ltfit::TrainContext ctx(model, *optimizer, scaler, profiler, state, torch::kCPU, torch::kFloat);
  ema.validation_begin(ctx);
  const auto during = snapshot(model);
  for (std::size_t i = 0; i < during.size(); ++i) {
    CHECK(torch::equal(during[i], saved.tensors.at(names[i].first)));
  }
  ema.validation_end(ctx);
  const auto after = snapshot(model);
  for (std::size_t i = 0; i < after.size(); ++i) CHECK(torch::equal(after[i], trained[i]));

  // A resumed hook takes the saved average back; other versions and shapes are refused.
  ltfit::EmaHook resumed(config);
  resumed.fit_begin(ctx);
  resumed.load_state(saved);
  ltfit::Classifier copy = ltfit::make_classifier("resnet18", 2);
  resumed.apply_to(copy);
  const auto applied = snapshot(copy);
  for (std::size_t i = 0; i < applied.size(); ++i) {
    CHECK(torch::equal(applied[i], saved.tensors.at(names[i].first)));
  }
  ltfit::HookState newer = saved;
  newer.version = 2;
  CHECK_THROWS_AS(resumed.load_state(newer), ltfit::CheckpointError);
  ltfit::HookState wrong = saved;
  wrong.tensors.begin()->second = torch::zeros({1});
  CHECK_THROWS_AS(resumed.load_state(wrong), ltfit::CheckpointError);
  ltfit::HookState missing = saved;
  missing.tensors.erase(missing.tensors.begin());
  CHECK_THROWS_AS(resumed.load_state(missing), ltfit::CheckpointError);
  CHECK_THROWS_AS(ltfit::apply_ema_state(copy, missing), ltfit::CheckpointError);
}

TEST_CASE("timm's own ModelEmaV3, given the same weights, keeps the same average",
          "[.][timm_oracle]") {
  nlohmann::json cases = nlohmann::json::array();
  const std::vector<std::vector<std::int64_t>> shapes = {{4, 3}, {4}, {4}, {}};
  for (const auto& [decay, warmup] :
       std::vector<std::pair<double, bool>>{{0.9, false}, {0.999, true}, {0.5, true}}) {
    torch::manual_seed(static_cast<std::uint64_t>(decay * 1000));
    std::vector<torch::Tensor> now = {torch::randn({4, 3}), torch::randn({4}), torch::rand({4}),
                                      torch::tensor(0, torch::kLong)};
    std::vector<torch::Tensor> average;
    for (const auto& t : now) average.push_back(t.clone());
    nlohmann::json steps = nlohmann::json::array();
    const auto record = [&](const std::vector<torch::Tensor>& values) {
      nlohmann::json s;
      const char* names[] = {"w", "b", "rm", "n"};
      for (std::size_t i = 0; i < 4; ++i) {
        const torch::Tensor flat = values[i].contiguous().view({-1});
        if (i == 3) {
          s[names[i]] = flat.item<std::int64_t>();
        } else {
          s[names[i]] =
              std::vector<float>(flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel());
        }
      }
      return s;
    };
    steps.push_back(record(now));
    const ltfit::EmaConfig config = ema_config(decay, warmup);
    for (std::int64_t t = 1; t <= 25; ++t) {
      now = {now[0] + 0.1 * torch::randn({4, 3}), now[1] - 0.05 * torch::randn({4}),
             now[2] * 0.9 + 0.1 * torch::rand({4}), now[3] + 1};
      steps.push_back(record(now));
      ltfit::ema_update(average, now, ltfit::ema_decay(config, t));
    }
    cases.push_back(
        {{"name", "decay " + std::to_string(decay) + (warmup ? " warm-up" : "")},
         {"decay", decay},
         {"warmup", warmup},
         {"shapes", {{"w", shapes[0]}, {"b", shapes[1]}, {"rm", shapes[2]}, {"n", shapes[3]}}},
         {"steps", steps},
         {"ema", record(average)}});
  }
  const auto [status, output] =
      ltfit::testing::run_python_oracle("tests/train/ema_oracle.py", cases.dump());
  INFO(output);
  CHECK(status == 0);
}
