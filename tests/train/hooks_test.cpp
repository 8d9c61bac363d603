// The Trainer's hooks: event order, what a hook may change, gradient clipping and accumulation
// against PyTorch's semantics, lr-find under the training precision, fp16 overflow and the
// smoothed loss.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "ltfit/data/loader.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/train/lr_finder.h"
#include "ltfit/train/mixup.h"
#include "ltfit/train/one_cycle.h"
#include "ltfit/train/optimizer.h"
#include "ltfit/train/standard_hooks.h"
#include "ltfit/train/trainer.h"

namespace {

constexpr std::int64_t kSide = 32;

// Batches made once from a fixed seed; every epoch serves the same ones in the same order.
class FixedBatches : public ltfit::BatchSource {
 public:
  FixedBatches(int batches, int batch_size, std::uint64_t seed = 5) {
    torch::manual_seed(seed);
    for (int b = 0; b < batches; ++b) {
      ltfit::Batch batch;
      batch.images = torch::randint(256, {batch_size, kSide, kSide, 3}, torch::kUInt8);
      batch.labels = torch::randint(2, {batch_size}, torch::kLong);
      batches_.push_back(batch);
    }
  }
  // The same images as one batch: the concatenation of all.
  ltfit::Batch concatenated() const {
    std::vector<torch::Tensor> images, labels;
    for (const auto& b : batches_) images.push_back(b.images), labels.push_back(b.labels);
    return {torch::cat(images), torch::cat(labels), {}};
  }
  void start_epoch(int /*epoch*/, std::int64_t skip) override { next_ = skip; }
  std::optional<ltfit::Batch> next() override {
    if (next_ >= static_cast<std::int64_t>(batches_.size())) return std::nullopt;
    return batches_[static_cast<std::size_t>(next_++)];
  }
  std::int64_t batches_per_epoch() const override {
    return static_cast<std::int64_t>(batches_.size());
  }

 private:
  std::vector<ltfit::Batch> batches_;
  std::int64_t next_ = 0;
};

class OneBatch : public ltfit::BatchSource {
 public:
  explicit OneBatch(ltfit::Batch batch) : batch_(std::move(batch)) {}
  void start_epoch(int /*epoch*/, std::int64_t skip) override { served_ = skip > 0; }
  std::optional<ltfit::Batch> next() override {
    if (served_) return std::nullopt;
    served_ = true;
    return batch_;
  }
  std::int64_t batches_per_epoch() const override { return 1; }

 private:
  ltfit::Batch batch_;
  bool served_ = false;
};

ltfit::Classifier small_model(std::uint64_t seed = 3) {
  torch::manual_seed(seed);
  return ltfit::make_classifier("resnet18", 2);
}

std::unique_ptr<torch::optim::Optimizer> sgd_like(
    ltfit::Classifier& model, ltfit::OptimizerKind kind = ltfit::OptimizerKind::kAdamW) {
  ltfit::OptimizerConfig config;
  config.name = kind;
  auto optimizer = ltfit::make_optimizer(config, model->layer_group_parameters());
  ltfit::set_hyper_parameters(*optimizer, {1e-3, 1e-3, 1e-3}, 0.9);
  return optimizer;
}

ltfit::StagePlan plain_stage(int epochs = 1) {
  ltfit::StagePlan stage;
  stage.name = "test";
  stage.epochs = epochs;
  return stage;
}

std::vector<torch::Tensor> gradients(const torch::optim::Optimizer& optimizer) {
  std::vector<torch::Tensor> out;
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) {
      out.push_back(p.grad().defined() ? p.grad().detach().clone() : torch::zeros_like(p));
    }
  }
  return out;
}

double max_abs_difference(const std::vector<torch::Tensor>& a,
                          const std::vector<torch::Tensor>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>());
  }
  return worst;
}

double total_norm(const std::vector<torch::Tensor>& grads) {
  double sum = 0.0;
  for (const auto& g : grads) sum += g.pow(2).sum().item<double>();
  return std::sqrt(sum);
}

// Records the gradients the optimizer is about to apply.
struct GradientProbe : ltfit::Hook {
  int order() const override { return 50; }  // after clipping (0), before observers
  void before_step(ltfit::TrainContext& ctx) override { seen.push_back(gradients(ctx.optimizer)); }
  std::vector<std::vector<torch::Tensor>> seen;
};

// Batch statistics off (BatchNorm uses its running statistics, no dropout): the model has no
// term that couples the images of a batch, so a batch's gradient is the mean of its images'.
struct NoBatchStatistics : ltfit::Hook {
  void before_batch(ltfit::TrainContext& ctx) override { ctx.model->eval(); }
};

// Captures the first batch's output and loss; no backward, no step.
struct Capture : ltfit::Hook {
  int order() const override { return 500; }
  void after_loss(ltfit::TrainContext& ctx) override {
    output = ctx.output.detach().to(torch::kDouble);
    loss = ctx.loss.item<double>();
    ctx.cancel_batch = true;
  }
  torch::Tensor output;
  double loss = 0.0;
};

}  // namespace

TEST_CASE("hooks run at each event in order, and a context flag acts", "[train][hooks]") {
  struct Log : ltfit::Hook {
    Log(std::vector<std::string>& out, std::string name, int order)
        : out_(out), name_(std::move(name)), order_(order) {}
    int order() const override { return order_; }
    void fit_begin(ltfit::TrainContext&) override { add("fit_begin"); }
    void stage_begin(ltfit::TrainContext&) override { add("stage_begin"); }
    void epoch_begin(ltfit::TrainContext&) override { add("epoch_begin"); }
    void before_batch(ltfit::TrainContext&) override { add("before_batch"); }
    void after_loss(ltfit::TrainContext&) override { add("after_loss"); }
    void after_backward(ltfit::TrainContext&) override { add("after_backward"); }
    void before_step(ltfit::TrainContext&) override { add("before_step"); }
    void after_step(ltfit::TrainContext&) override { add("after_step"); }
    void epoch_end(ltfit::TrainContext&) override { add("epoch_end"); }
    void stage_end(ltfit::TrainContext&) override { add("stage_end"); }
    void fit_end(ltfit::TrainContext&) override { add("fit_end"); }
    void add(const std::string& event) {
      if (name_ == "b" || event == "before_step") out_.push_back(name_ + ":" + event);
    }
    std::vector<std::string>& out_;
    std::string name_;
    int order_;
  };
  std::vector<std::string> events;
  Log late(events, "late", 10), b(events, "b", 5);
  FixedBatches data(1, 2);
  auto model = small_model();
  auto optimizer = sgd_like(model);
  ltfit::Trainer trainer(model, *optimizer, data, nullptr, {}, {&late, &b});
  trainer.fit({plain_stage()});
  const std::vector<std::string> expected{"b:fit_begin",    "b:stage_begin",    "b:epoch_begin",
                                          "b:before_batch", "b:after_loss",     "b:after_backward",
                                          "b:before_step",  "late:before_step", "b:after_step",
                                          "b:epoch_end",    "b:stage_end",      "b:fit_end"};
  CHECK(events == expected);

  SECTION("skip_step leaves the weights as they were and still counts the step") {
    struct Skip : ltfit::Hook {
      void before_step(ltfit::TrainContext& ctx) override { ctx.skip_step = true; }
    } skip;
    auto before = model->parameters()[0].detach().clone();
    ltfit::Trainer skipping(model, *optimizer, data, nullptr, {}, {&skip});
    skipping.fit({plain_stage()});
    CHECK(torch::equal(before, model->parameters()[0]));
    CHECK(skipping.state().global_step == 1);
  }
  SECTION("cancel_batch skips backward and step; stop ends the fit after that batch") {
    struct Cancel : ltfit::Hook {
      void after_loss(ltfit::TrainContext& ctx) override { ctx.cancel_batch = ctx.stop = true; }
      void after_backward(ltfit::TrainContext&) override { ++backwards; }
      void epoch_end(ltfit::TrainContext&) override { ++epochs; }
      int backwards = 0, epochs = 0;
    } cancel;
    FixedBatches three(3, 2);
    ltfit::Trainer cancelling(model, *optimizer, three, nullptr, {}, {&cancel});
    cancelling.fit({plain_stage(2)});
    CHECK(cancel.backwards == 0);
    CHECK(cancel.epochs == 0);
    CHECK(cancelling.state().global_step == 0);
  }
}

TEST_CASE("accumulating N batches gives the gradients of one batch N times larger",
          "[train][hooks]") {
  // Under SGD a step is linear in the gradient (lr 1e-3), so the weights after it agree about
  // a thousand times closer than the gradients do, and a gradient scaled wrongly shows in them.
  // AdamW's first step is lr * g / (|g| + eps): where g is near 0 it maps a gradient difference
  // d to up to lr / eps * d (100 d here), so its weights are held to that bound, not a fixed one.
  const auto kind = GENERATE(ltfit::OptimizerKind::kSgd, ltfit::OptimizerKind::kAdamW);
  const bool sgd = kind == ltfit::OptimizerKind::kSgd;
  INFO((sgd ? "SGD" : "AdamW"));
  FixedBatches small(4, 2);  // 4 batches of 2 images
  OneBatch large(small.concatenated());

  NoBatchStatistics fixed_bn;
  auto accumulated_model = small_model();
  auto accumulated_optimizer = sgd_like(accumulated_model, kind);
  ltfit::AccumulateHook accumulate(4);
  GradientProbe accumulated;
  ltfit::Trainer accumulating(accumulated_model, *accumulated_optimizer, small, nullptr, {},
                              {&fixed_bn, &accumulate, &accumulated});
  accumulating.fit({plain_stage()});

  auto one_model = small_model();
  auto one_optimizer = sgd_like(one_model, kind);
  GradientProbe one;
  ltfit::Trainer single(one_model, *one_optimizer, large, nullptr, {}, {&fixed_bn, &one});
  single.fit({plain_stage()});

  REQUIRE(accumulated.seen.size() == 1);  // one optimizer step for the four batches
  REQUIRE(one.seen.size() == 1);
  CHECK(accumulating.state().global_step == 1);
  CHECK(total_norm(one.seen[0]) > 1e-3);
  const double gradient_difference = max_abs_difference(accumulated.seen[0], one.seen[0]);
  CHECK(gradient_difference < 1e-6);
  // And the weights after the step agree too.
  const double weight_difference =
      max_abs_difference(accumulated_model->parameters(), one_model->parameters());
  // Both steps also round to float32: one unit in the last place of the largest weight, twice.
  double largest_weight = 0.0;
  for (const auto& p : one_model->parameters())
    largest_weight = std::max(largest_weight, p.abs().max().item<double>());
  const double rounding = 2.0 * largest_weight * std::ldexp(1.0, -23);
  const double lr = 1e-3, eps = ltfit::OptimizerConfig{}.resolved_eps();
  const double bound = (sgd ? lr : lr / eps) * gradient_difference + rounding;
  UNSCOPED_INFO("gradients differ by " << gradient_difference << ", weights by "
                                       << weight_difference << " (bound " << bound << ")");
  CHECK(weight_difference <= bound);
}

TEST_CASE("accumulation: the schedule counts optimizer steps, and a short last group is a mean",
          "[train][hooks]") {
  FixedBatches data(5, 2);  // 5 batches: groups of 2, 2 and a last one of 1
  auto model = small_model();
  auto optimizer = sgd_like(model);
  struct Steps : ltfit::TrainObserver {
    void on_stage_begin(const ltfit::StageInfo& s) override { steps_per_epoch = s.steps_per_epoch; }
    void on_step(const ltfit::StepStats& s) override { steps.push_back(s); }
    std::int64_t steps_per_epoch = 0;
    std::vector<ltfit::StepStats> steps;
  } steps;
  struct Divisors : ltfit::Hook {
    int order() const override { return ltfit::hook_order::kLossScaler - 1; }  // after accumulate
    void after_loss(ltfit::TrainContext& ctx) override {
      ratios.push_back(ctx.loss.item<double>() / ctx.backward_loss.item<double>());
    }
    std::vector<double> ratios;
  } divisors;
  ltfit::ScheduleHook schedule;
  ltfit::AccumulateHook accumulate(2);
  ltfit::ObserverHook observe(steps);
  ltfit::StagePlan stage = plain_stage(2);
  stage.group_lrs = {1e-3, 1e-3, 1e-3};
  ltfit::Trainer trainer(model, *optimizer, data, nullptr, {},
                         {&schedule, &accumulate, &observe, &divisors});
  trainer.fit({stage});
  CHECK(steps.steps_per_epoch == 3);
  REQUIRE(steps.steps.size() == 6);
  const ltfit::OneCycleSchedule lr{6, 1e-3, 0.3, 25.0, 1e5, 0.95, 0.85, 0.95};
  for (std::size_t i = 0; i < steps.steps.size(); ++i) {
    CHECK(steps.steps[i].step == static_cast<std::int64_t>(i));
    CHECK(steps.steps[i].lrs[0] == Approx(ltfit::lr_at(lr, static_cast<std::int64_t>(i))));
  }
  const std::vector<double> expected{2, 2, 2, 2, 1, 2, 2, 2, 2, 1};
  REQUIRE(divisors.ratios.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i)
    CHECK(divisors.ratios[i] == Approx(expected[i]));
}

TEST_CASE("accumulation: an epoch cut short by unreadable images still steps its last group",
          "[train][hooks]") {
  // Planned: 4 batches, groups of 2. Delivered: 3 (the loader ran out after leaving images
  // out). The third batch's gradient must be applied, as the mean of its one-batch group.
  struct ShortEpoch : FixedBatches {
    ShortEpoch() : FixedBatches(3, 2) {}
    std::int64_t batches_per_epoch() const override { return 4; }
  } data;
  struct SkipEveryStep : ltfit::Hook {  // keeps the weights, so each group's gradient compares
    int order() const override { return 60; }  // after the probe
    void before_step(ltfit::TrainContext& ctx) override { ctx.skip_step = true; }
  } keep;
  NoBatchStatistics fixed_bn;
  auto model = small_model();
  auto optimizer = sgd_like(model);
  ltfit::AccumulateHook accumulate(2);
  GradientProbe probe;
  ltfit::Trainer trainer(model, *optimizer, data, nullptr, {},
                         {&fixed_bn, &accumulate, &probe, &keep});
  trainer.fit({plain_stage()});
  REQUIRE(probe.seen.size() == 2);  // the group of batches 0-1, then batch 2 alone
  CHECK(trainer.state().global_step == 2);

  FixedBatches all(3, 2);
  all.start_epoch(0, 2);
  OneBatch last(*all.next());
  auto alone_model = small_model();
  auto alone_optimizer = sgd_like(alone_model);
  GradientProbe alone;
  ltfit::Trainer single(alone_model, *alone_optimizer, last, nullptr, {},
                        {&fixed_bn, &alone, &keep});
  single.fit({plain_stage()});
  REQUIRE(alone.seen.size() == 1);
  CHECK(total_norm(alone.seen[0]) > 1e-3);
  CHECK(max_abs_difference(probe.seen[1], alone.seen[0]) < 1e-6);
}

TEST_CASE("clip_grad_norm clips after the loss scaler's unscale, as torch's AMP recipe",
          "[train][hooks]") {
  FixedBatches data(1, 4);
  const double max_norm = 0.05;

  // The reference: plain fp32 gradients clipped by torch::nn::utils::clip_grad_norm_.
  auto reference_model = small_model();
  auto reference_optimizer = sgd_like(reference_model);
  GradientProbe unclipped;
  ltfit::Trainer plain(reference_model, *reference_optimizer, data, nullptr, {}, {&unclipped});
  plain.fit({plain_stage()});
  REQUIRE(total_norm(unclipped.seen[0]) > 4 * max_norm);  // the clip really acts
  std::vector<torch::Tensor> expected;
  for (const auto& g : unclipped.seen[0]) expected.push_back(g.clone().requires_grad_(false));
  std::vector<torch::Tensor> as_params;
  for (auto& g : expected) {
    auto p = torch::zeros_like(g).requires_grad_(true);
    p.mutable_grad() = g.clone();
    as_params.push_back(p);
  }
  torch::nn::utils::clip_grad_norm_(as_params, max_norm);
  for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = as_params[i].grad();

  // A loss scaler at 1024 (fp16's, forced on in fp32): clipping must see unscaled gradients.
  auto model = small_model();
  auto optimizer = sgd_like(model);
  ltfit::TrainerOptions options;
  options.scaler = ltfit::GradScalerOptions{.enabled = true, .init_scale = 1024.0};
  ltfit::ClipGradHook clip(max_norm);
  GradientProbe clipped;
  ltfit::Trainer trainer(model, *optimizer, data, nullptr, options, {&clip, &clipped});
  trainer.fit({plain_stage()});
  REQUIRE(clipped.seen.size() == 1);
  CHECK(total_norm(clipped.seen[0]) == Approx(max_norm).epsilon(1e-4));
  CHECK(max_abs_difference(clipped.seen[0], expected) < 1e-6);
  CHECK(trainer.state().scaler.scale == 1024.0);  // a clean step: the scale stays
}

TEST_CASE("an overflowed fp16 step is skipped and does not poison the smoothed loss",
          "[train][hooks]") {
  struct Overflow : ltfit::Hook {  // what an fp16 overflow looks like to the loop
    int order() const override { return ltfit::hook_order::kLossCheck - 1; }
    void after_loss(ltfit::TrainContext& ctx) override {
      if (ctx.state.global_step == 1)
        ctx.loss_value = INFINITY, ctx.backward_loss = ctx.loss * INFINITY;
    }
  } overflow;
  FixedBatches data(4, 2);
  auto model = small_model();
  auto optimizer = sgd_like(model);
  ltfit::TrainerOptions options;
  options.scaler = ltfit::GradScalerOptions{.enabled = true, .init_scale = 1024.0};
  ltfit::Trainer trainer(model, *optimizer, data, nullptr, options, {&overflow});
  trainer.fit({plain_stage()});
  CHECK(trainer.state().global_step == 4);
  CHECK(trainer.state().scaler.scale == 512.0);  // backed off once
  CHECK(std::isfinite(trainer.state().position.loss_avg));
  CHECK(trainer.state().position.loss_count == 3);  // the overflowed batch left out

  SECTION("in fp32 a non-finite loss stops the run") {
    auto fp32_model = small_model();
    auto fp32_optimizer = sgd_like(fp32_model);
    ltfit::Trainer fp32(fp32_model, *fp32_optimizer, data, nullptr, {}, {&overflow});
    CHECK_THROWS_WITH(fp32.fit({plain_stage()}), Catch::Contains("training loss became inf"));
  }
}

TEST_CASE("lr-find runs under the training precision: bf16 on CPU really trains in bf16",
          "[train][hooks][lr_find]") {
  struct DtypeProbe : ltfit::Hook {
    void after_loss(ltfit::TrainContext& ctx) override {
      dtypes.push_back(ctx.output.scalar_type());
    }
    std::vector<torch::Dtype> dtypes;
  };
  FixedBatches data(3, 2);
  ltfit::LrFindOptions options;
  options.num_steps = 5;
  options.start_lr = 1e-6;
  options.end_lr = 1e-4;
  for (const std::string precision : {"fp32", "bf16"}) {
    auto model = small_model();
    auto optimizer = sgd_like(model);
    const auto before = model->parameters()[0].detach().clone();
    DtypeProbe probe;
    ltfit::TrainerOptions trainer;
    trainer.train.precision = ltfit::parse_precision(precision);
    const auto result = ltfit::lr_find(model, *optimizer, data, trainer, options, {&probe});
    CHECK(result.lrs.size() == 5);
    REQUIRE(probe.dtypes.size() == 5);
    const torch::Dtype expected = precision == "bf16" ? torch::kBFloat16 : torch::kFloat;
    for (const auto d : probe.dtypes) CHECK(d == expected);
    CHECK(torch::equal(before, model->parameters()[0]));  // restored afterwards
  }
}

TEST_CASE("the loss takes a target distribution from a hook, and label smoothing as torch's",
          "[train][hooks]") {
  FixedBatches data(1, 4);
  const ltfit::Batch batch = data.concatenated();
  // Sets a distribution: `mix` of the one-hot label, the rest on class 0.
  struct SoftTargets : ltfit::Hook {
    explicit SoftTargets(double mix) : mix_(mix) {}
    void before_batch(ltfit::TrainContext& ctx) override {
      const torch::Tensor one_hot = torch::one_hot(ctx.labels, 2).to(torch::kFloat);
      const torch::Tensor first =
          torch::one_hot(torch::zeros_like(ctx.labels), 2).to(torch::kFloat);
      ctx.targets = mix_ * one_hot + (1.0 - mix_) * first;
    }
    double mix_;
  };
  const auto run = [&](ltfit::Hook* targets, double smoothing) {
    auto model = small_model();
    auto optimizer = sgd_like(model);
    NoBatchStatistics eval_mode;
    Capture capture;
    std::vector<ltfit::Hook*> hooks{&eval_mode, &capture};
    if (targets != nullptr) hooks.push_back(targets);
    OneBatch source(batch);
    ltfit::TrainerOptions options;
    options.train.label_smoothing = smoothing;
    ltfit::Trainer trainer(model, *optimizer, source, nullptr, options, hooks);
    trainer.fit({plain_stage()});
    return capture;
  };
  const torch::Tensor labels = batch.labels;
  const Capture hard = run(nullptr, 0.0);
  const torch::Tensor log_p = torch::log_softmax(hard.output, 1);
  const torch::Tensor one_hot = torch::one_hot(labels, 2).to(torch::kDouble);
  const auto cross_entropy = [&](const torch::Tensor& target) {
    return -(target * log_p).sum(1).mean().item<double>();
  };
  CHECK(hard.loss == Approx(cross_entropy(one_hot)).epsilon(1e-5));

  SoftTargets exact(1.0);  // the one-hot distribution: the same loss as the labels
  CHECK(run(&exact, 0.0).loss == Approx(hard.loss).epsilon(1e-6));
  SoftTargets mixed(0.7);
  const torch::Tensor mix = 0.7 * one_hot + 0.3 * torch::one_hot(torch::zeros_like(labels), 2);
  CHECK(run(&mixed, 0.0).loss == Approx(cross_entropy(mix.to(torch::kDouble))).epsilon(1e-5));
  // torch's label_smoothing: the target becomes (1 - eps) * target + eps / K, labels or not.
  const double eps = 0.1;
  CHECK(run(nullptr, eps).loss ==
        Approx(cross_entropy((1 - eps) * one_hot + eps / 2)).epsilon(1e-5));
  CHECK(run(&mixed, eps).loss == Approx(cross_entropy((1 - eps) * mix + eps / 2)).epsilon(1e-5));
  CHECK(cross_entropy(mix) != Approx(hard.loss).epsilon(1e-3));  // the cases differ
}

TEST_CASE("class weights scale each class's term of the training loss, as torch's weight",
          "[train][hooks]") {
  FixedBatches data(1, 4);
  const ltfit::Batch batch = data.concatenated();
  const torch::Tensor weights = torch::tensor({0.25F, 1.75F});
  const auto run = [&](bool weighted) {
    auto model = small_model();
    auto optimizer = sgd_like(model);
    NoBatchStatistics eval_mode;
    Capture capture;
    OneBatch source(batch);
    ltfit::TrainerOptions options;
    if (weighted) options.class_weights = weights;
    ltfit::Trainer trainer(model, *optimizer, source, nullptr, options, {&eval_mode, &capture});
    trainer.fit({plain_stage()});
    return capture;
  };
  const Capture plain = run(false), weighted = run(true);
  const torch::Tensor log_p = torch::log_softmax(weighted.output, 1);
  const torch::Tensor w = weights.to(torch::kDouble).index({batch.labels});
  const torch::Tensor nll = -log_p.gather(1, batch.labels.view({-1, 1})).view({-1});
  // With class indices torch divides by the batch's summed weights.
  CHECK(weighted.loss == Approx(((w * nll).sum() / w.sum()).item<double>()).epsilon(1e-5));
  CHECK(plain.loss == Approx(nll.mean().item<double>()).epsilon(1e-5));
}

TEST_CASE("the MixUp hook mixes the batch and its targets, the same draws for the same step",
          "[train][hooks][mixup]") {
  FixedBatches data(2, 4);
  struct Capture : ltfit::Hook {
    int order() const override { return 500; }
    void after_loss(ltfit::TrainContext& ctx) override {
      images.push_back(ctx.images.detach().clone());
      targets.push_back(ctx.targets.detach().clone());
      labels.push_back(ctx.labels.clone());
      const torch::Tensor log_p = torch::log_softmax(ctx.output.detach().to(torch::kDouble), 1);
      expected.push_back(-(ctx.targets.to(torch::kDouble) * log_p).sum(1).mean().item<double>());
      losses.push_back(ctx.loss.item<double>());
    }
    std::vector<torch::Tensor> images, targets, labels;
    std::vector<double> expected, losses;
  };
  ltfit::MixupConfig config;
  config.mixup_alpha = 0.4;
  config.cutmix_alpha = 1.0;
  const auto run = [&](std::uint64_t seed) {
    auto model = small_model();
    auto optimizer = sgd_like(model);
    Capture capture;
    ltfit::MixupHook mixup(config, 2, seed, 0, 1);
    FixedBatches source(2, 4);
    ltfit::Trainer trainer(model, *optimizer, source, nullptr, {}, {&mixup, &capture});
    trainer.fit({plain_stage()});
    return capture;
  };
  const Capture a = run(42), b = run(42), c = run(43);
  REQUIRE(a.images.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(torch::equal(a.images[i], b.images[i]));  // stateless: (seed, step) decide
    CHECK(torch::equal(a.targets[i], b.targets[i]));
    CHECK(torch::allclose(a.targets[i].sum(1), torch::ones({4})));
    CHECK(a.losses[i] == Approx(a.expected[i]).epsilon(1e-5));
  }
  CHECK_FALSE(torch::equal(a.images[0], c.images[0]));  // another seed, other draws
  const ltfit::Batch first = data.concatenated();
  CHECK(torch::equal(a.labels[0], first.labels.slice(0, 0, 4)));  // metrics keep hard labels
}
