// The optimizer step with its state on the device (train/sync_free_step.h) against today's eager
// step over 120 one-cycle steps: FusedAdamW and FusedSGD with discriminative LRs, cycling
// momentum and weight decay, fp16 loss scaling (GradScaler on the host: overflow steps skipped,
// backoff and growth), gradient clipping, and a layer group frozen for the first steps. The
// parameters, moments, step counts and the scaler's state must agree; the losses kept on the
// device must give the trainer's step losses and smoothed loss. (That it reads nothing from the
// device is what a CUDA graph needs; on a GPU, a [cuda] case runs the step under CUDA's sync
// debug mode.) Then the Trainer with TrainerOptions::sync_free_step against the eager Trainer: a
// ResNet-18 fine_tune on real JPEGs, on the CPU and, tagged [cuda], in fp16 on a GPU; and with
// the loss read once per interval (loss_read_interval) against read after each batch.
#include <torch/cuda.h>
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "ltfit/data/loader.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/train/amp.h"
#include "ltfit/train/optimizer.h"
#include "ltfit/train/sync_free_step.h"
#include "ltfit/train/trainer.h"
#include "support/cuda_build.h"
#include "support/test_support.h"
#include "train/optimizer_fixtures.h"

#ifdef LTFIT_HAS_CUDA_HEADERS
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace {

constexpr int kSteps = 120;
constexpr int kFrozenSteps = 30;  // group 0 has no gradients before this step (fine_tune's freeze)

using Groups = ltfit::testing::ParamGroups;
using ltfit::testing::clone_param_groups;
using ltfit::testing::make_param_groups;
using ltfit::testing::max_param_gap;

std::vector<double> step_lrs(int t) { return ltfit::testing::one_cycle_lrs(t, kSteps, 2e-2); }
double step_momentum(int t) { return ltfit::testing::one_cycle_momentum(t, kSteps); }
ltfit::OptimizerConfig fused_config(ltfit::OptimizerKind kind) {
  return ltfit::testing::weight_decay_config(kind, /*fused=*/true);
}

// Step t's gradient of parameter k, times the loss scale as a scaled backward gives it; steps 17,
// 18 and 61 overflow (an inf in one gradient, a NaN in another).
void set_gradients(Groups& groups, int t, const torch::Tensor& scale) {
  int k = 0;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (auto& p : groups[g]) {
      if (g == 0 && t < kFrozenSteps) {
        p.mutable_grad() = torch::Tensor();
        ++k;
        continue;
      }
      // Gently tied to the parameter (a step's difference is not amplified step after step).
      torch::Tensor grad = torch::sin(p.detach() * 0.5 + 0.05 * t + static_cast<double>(k)) * scale;
      if ((t == 17 || t == 61) && k == 3) grad.view(-1)[0] = std::numeric_limits<float>::infinity();
      if (t == 18 && k == 4) grad.view(-1)[1] = std::numeric_limits<float>::quiet_NaN();
      p.mutable_grad() = grad;
      ++k;
    }
  }
}

}  // namespace

TEST_CASE("the sync-free step equals today's eager step: scaling, skips, clipping, frozen groups",
          "[train][sync_free]") {
  const ltfit::GradScalerOptions scaling{
      .enabled = true, .init_scale = 1024.0, .growth_interval = 5};
  for (const auto kind : {ltfit::OptimizerKind::kAdamW, ltfit::OptimizerKind::kSgd}) {
    for (const double clip : {0.0, 0.5}) {
      const bool adamw = kind == ltfit::OptimizerKind::kAdamW;
      INFO((adamw ? "adamw" : "sgd") << ", clip " << clip);
      Groups eager = make_param_groups(3), graphed = clone_param_groups(eager);
      auto eager_optimizer = ltfit::make_optimizer(fused_config(kind), eager);
      auto graphed_optimizer = ltfit::make_optimizer(fused_config(kind), graphed);
      ltfit::GradScaler scaler(scaling);
      ltfit::SyncFreeStep step(*graphed_optimizer, scaling, clip);
      int skipped = 0;
      for (int t = 0; t < kSteps; ++t) {
        // Today's: unscale (one read), skip or clip and step, update the scale on the host.
        set_gradients(eager, t, torch::full({}, scaler.scale_value()));
        ltfit::set_hyper_parameters(*eager_optimizer, step_lrs(t), step_momentum(t));
        const bool overflow = scaler.unscale(*eager_optimizer);
        if (!overflow) {
          if (clip > 0) {
            std::vector<torch::Tensor> with_grad;
            for (const auto& g : eager)
              for (const auto& p : g)
                if (p.grad().defined()) with_grad.push_back(p);
            torch::nn::utils::clip_grad_norm_(with_grad, clip);
          }
          eager_optimizer->step();
        }
        scaler.update();
        // The sync-free step: the scale comes from the device, nothing is read.
        set_gradients(graphed, t, step.scale_loss(torch::ones({})));
        step.set_hyper_parameters(step_lrs(t), step_momentum(t));
        step.step();
        skipped += overflow;
        CHECK(step.last_step_skipped() == overflow);
        const ltfit::GradScalerState host = scaler.state(), device = step.scaler_state();
        CHECK(device.scale == host.scale);
        CHECK(device.growth_tracker == host.growth_tracker);
      }
      CHECK(skipped == 3);
      step.sync_state();
      const double gap = max_param_gap(eager, graphed);
      WARN((adamw ? "AdamW" : "SGD")
           << (clip > 0 ? " clipped" : "") << ": sync-free against eager after " << kSteps
           << " steps, largest difference " << gap);
      CHECK(gap < 1e-6);
      CHECK_FALSE(
          torch::equal(graphed[0][0], make_param_groups(3)[0][0]));  // the frozen group moved later
      for (std::size_t g = 0; g < eager.size(); ++g) {
        for (std::size_t i = 0; i < eager[g].size(); ++i) {
          const auto& a = *eager_optimizer->state().at(eager[g][i].unsafeGetTensorImpl());
          const auto& b = *graphed_optimizer->state().at(graphed[g][i].unsafeGetTensorImpl());
          if (adamw) {
            const auto& x = static_cast<const torch::optim::AdamWParamState&>(a);
            const auto& y = static_cast<const torch::optim::AdamWParamState&>(b);
            CHECK(x.step() == y.step());
            CHECK(x.step() == (g == 0 ? kSteps - kFrozenSteps - 1 : kSteps - 3));
            CHECK((x.exp_avg() - y.exp_avg()).abs().max().item<double>() < 1e-6);
            CHECK((x.exp_avg_sq() - y.exp_avg_sq()).abs().max().item<double>() < 1e-6);
          } else {
            const auto& x = static_cast<const torch::optim::SGDParamState&>(a);
            const auto& y = static_cast<const torch::optim::SGDParamState&>(b);
            CHECK(torch::allclose(x.momentum_buffer(), y.momentum_buffer(), 1e-5, 1e-7));
          }
        }
      }
    }
  }
}

TEST_CASE("the sync-free step trains a real model as the eager step does, unscaled",
          "[train][sync_free]") {
  torch::manual_seed(11);
  auto make_net = [] {
    return torch::nn::Sequential(torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 6, 3)),
                                 torch::nn::ReLU(), torch::nn::Flatten(),
                                 torch::nn::Linear(6 * 6 * 6, 4));
  };
  auto eager_net = make_net();
  auto graphed_net = make_net();
  {
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < eager_net->parameters().size(); ++i)
      graphed_net->parameters()[i].copy_(eager_net->parameters()[i]);
  }
  const Groups eager{eager_net->parameters()}, graphed{graphed_net->parameters()};
  auto eager_optimizer = ltfit::make_optimizer(fused_config(ltfit::OptimizerKind::kAdamW), eager);
  auto graphed_optimizer =
      ltfit::make_optimizer(fused_config(ltfit::OptimizerKind::kAdamW), graphed);
  ltfit::SyncFreeStep step(*graphed_optimizer, {.enabled = false});
  ltfit::DeviceStepLosses losses(torch::kCPU);
  ltfit::TrainPosition host, device;  // the trainer's smoothed loss, on the host and read
  std::vector<double> step_losses;    // each step's loss, read after each step
  std::vector<ltfit::StepLoss> read;
  const torch::Tensor x = torch::randn({8, 3, 8, 8}), y = torch::randint(0, 4, {8});
  for (int t = 0; t < 40; ++t) {
    const torch::Tensor eager_loss = torch::cross_entropy_loss(eager_net->forward(x), y);
    eager_loss.backward();
    ltfit::set_hyper_parameters(*eager_optimizer, {1e-2}, step_momentum(t));
    eager_optimizer->step();
    eager_optimizer->zero_grad();
    const torch::Tensor loss = torch::cross_entropy_loss(graphed_net->forward(x), y);
    step.scale_loss(loss).backward();
    step.set_hyper_parameters({1e-2}, step_momentum(t));
    step.step();
    graphed_optimizer->zero_grad();
    // Two batches per step: the loss and, at step 20, a NaN (the step's loss NaN; the smoothed
    // loss leaves it out, as the trainer does).
    const torch::Tensor second = t == 20 ? torch::full({}, std::nan("")) : loss * 0.5;
    losses.add_batch(loss, 2);
    losses.add_batch(second, 2);
    losses.end_step(t, t == 39 ? 0.75 : 1.0, {}, 1.0);
    step_losses.push_back((loss.item<double>() / 2 + second.item<double>() / 2) *
                          (t == 39 ? 0.75 : 1.0));
    for (const double l : {loss.item<double>(), second.item<double>()}) {
      if (std::isfinite(l)) ltfit::add_to_smoothed_loss(host, l);
    }
    if (t == 9 || t == 30 || t == 39) {  // read per interval
      const ltfit::DeviceStepLosses::Reading reading = losses.read();
      reading.apply(device);
      read.insert(read.end(), reading.steps.begin(), reading.steps.end());
      CHECK(losses.pending() == 0);
    }
  }
  double gap = 0.0;
  for (std::size_t i = 0; i < eager.front().size(); ++i)
    gap = std::max(gap, (eager[0][i] - graphed[0][i]).abs().max().item<double>());
  WARN("a conv net, AdamW, 40 steps: sync-free against eager, largest difference " << gap);
  CHECK(gap < 1e-5);
  REQUIRE(read.size() == 40);
  for (int t = 0; t < 40; ++t) {
    INFO("step " << t);
    CHECK(read[t].step == t);
    CHECK(read[t].scale == 1.0);
    if (t == 20) {
      CHECK(std::isnan(read[t].loss));
    } else {
      CHECK(read[t].loss == step_losses[t]);  // the host's arithmetic, bit for bit
    }
  }
  CHECK(device.loss_count == host.loss_count);
  CHECK(host.loss_count == 79);
  CHECK(device.loss_avg == Approx(host.loss_avg).epsilon(1e-12));
  CHECK(losses.read().steps.empty());  // a read starts afresh
  CHECK(step.scaler_state().scale == 1.0);
}

namespace {

// A ResNet-18 after fastai's fine_tune (1 frozen epoch, 2 unfrozen) on 24 JPEGs at 32 px, batch
// 8, two batches per step (the epoch's last group short), clipping at 0.5: the eager Trainer or
// the sync-free one, from the same initial weights, on the same (unshuffled) batches.
struct FineTuned {
  ltfit::Classifier model = nullptr;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::int64_t steps = 0;
  ltfit::GradScalerState scaler;
  std::vector<ltfit::StepStats> reported;  // each step as observers get it (steps.csv)
  std::vector<double> loss_scales;         // each step's, as steps.csv reports it
  std::vector<double> train_losses;        // each epoch's smoothed training loss
  // At the after_step of FineTuneSetup::save_step, what a checkpoint would hold.
  ltfit::TrainPosition saved_position;
  ltfit::GradScalerState saved_scaler;
};

struct FineTuneSetup {
  bool sync_free = false;
  std::optional<ltfit::GradScalerOptions> scaler;  // the Trainer's default when unset
  torch::Device device = torch::kCPU;
  ltfit::Precision precision = ltfit::Precision::kFp32;
  int accumulate = 2;                   // batches per step
  std::int64_t loss_read_interval = 0;  // TrainerOptions'
  int poison_batch = -1;                // this batch's images (counted from 0) all NaN
  std::int64_t save_step = -1;          // this step votes a checkpoint (as a time box would)
  ltfit::Hook* extra_hook = nullptr;    // one more hook, when set
};

// Fills one batch's images with NaN (its loss then NaN), for the loss check; votes a save at
// one step and keeps what a checkpoint would hold then.
struct ProbeHook : ltfit::Hook {
  int poison_batch = -1, seen = 0;
  std::int64_t save_step = -1;
  ltfit::TrainPosition position;
  ltfit::GradScalerState scaler;
  int order() const override { return ltfit::hook_order::kObservers + 1; }  // checkpoint's place
  void before_batch(ltfit::TrainContext& ctx) override {
    if (seen++ == poison_batch) ctx.images = torch::full_like(ctx.images, std::nan(""));
  }
  void after_loss(ltfit::TrainContext& ctx) override {
    if (ctx.step_now) ctx.vote_save = ctx.state.global_step == save_step;
  }
  void after_step(ltfit::TrainContext& ctx) override {
    if (!ctx.vote_save) return;
    position = ctx.state.position;
    scaler = ctx.state.scaler;
  }
};

ltfit::Classifier initial_resnet18() {
  torch::manual_seed(5);
  return ltfit::make_classifier("resnet18", 2);
}

FineTuned fine_tune(const std::vector<ltfit::Sample>& samples, const FineTuneSetup& setup) {
  ltfit::LoaderOptions data;
  data.data.image_size = 32;
  data.data.batch_size = 8;
  data.data.workers = 1;
  data.train = false;  // no random augmentation: both runs see the same pixels
  ltfit::Loader train(samples, data);
  FineTuned run;
  run.model = initial_resnet18();
  run.model->to(setup.device);
  run.optimizer =
      ltfit::make_optimizer(ltfit::OptimizerConfig{}, run.model->layer_group_parameters());
  ltfit::ScheduleHook schedule;
  ltfit::AccumulateHook accumulate(setup.accumulate);
  ltfit::ClipGradHook clip(0.5);
  ProbeHook probe;
  probe.poison_batch = setup.poison_batch;
  probe.save_step = setup.save_step;
  struct Steps : ltfit::TrainObserver {
    FineTuned& run;
    explicit Steps(FineTuned& r) : run(r) {}
    void on_step(const ltfit::StepStats& s) override {
      run.reported.push_back(s);
      run.loss_scales.push_back(s.loss_scale);
    }
  } steps(run);
  ltfit::ObserverHook observe(steps);
  ltfit::TrainerOptions options;
  options.device = setup.device;
  options.train.precision = setup.precision;
  options.sync_free_step = setup.sync_free;
  options.loss_read_interval = setup.loss_read_interval;
  options.scaler = setup.scaler;
  std::vector<ltfit::Hook*> hooks{&schedule, &accumulate, &clip, &observe, &probe};
  if (setup.extra_hook != nullptr) hooks.push_back(setup.extra_hook);
  ltfit::Trainer trainer(run.model, *run.optimizer, train, nullptr, options, hooks);
  const std::vector<double> lrs{2e-4, 2e-3, 2e-2};
  for (const auto& epoch : trainer.fit({{"frozen", 1, true, lrs, ltfit::ScheduleConfig{}},
                                        {"unfrozen", 2, false, lrs, ltfit::ScheduleConfig{}}})) {
    run.train_losses.push_back(epoch.train_loss);
  }
  run.steps = trainer.state().global_step;
  run.saved_position = probe.position;
  run.saved_scaler = probe.scaler;
  run.scaler = trainer.state().scaler;
  return run;
}

// The two runs agree: steps, the scaler, the weights and first moments within `tolerance`, the
// BatchNorm statistics, and the AdamW step counts (written back: a checkpoint would be the same).
void check_same_run(const FineTuned& eager, const FineTuned& sync_free, double tolerance,
                    std::int64_t steps = 6, const char* what = "sync-free against eager") {
  CHECK(eager.steps == steps);  // 3 epochs of 2 steps (3 without accumulation)
  CHECK(sync_free.steps == eager.steps);
  CHECK(sync_free.scaler.scale == eager.scaler.scale);
  CHECK(sync_free.scaler.growth_tracker == eager.scaler.growth_tracker);
  CHECK(sync_free.loss_scales == eager.loss_scales);
  auto a = eager.model->named_parameters(), b = sync_free.model->named_parameters();
  auto start = initial_resnet18()->named_parameters();
  double weight_gap = 0.0, moment_gap = 0.0, moved = 0.0;
  for (const auto& item : a) {
    const torch::Tensor& p = item.value();
    const torch::Tensor& q = b[item.key()];
    weight_gap = std::max(weight_gap, (p - q).abs().max().item<double>());
    moved = std::max(moved, (p.cpu() - start[item.key()]).abs().max().item<double>());
    const auto& ma = static_cast<const torch::optim::AdamWParamState&>(
        *eager.optimizer->state().at(p.unsafeGetTensorImpl()));
    const auto& mb = static_cast<const torch::optim::AdamWParamState&>(
        *sync_free.optimizer->state().at(q.unsafeGetTensorImpl()));
    CHECK(ma.step() == mb.step());
    moment_gap = std::max(moment_gap, (ma.exp_avg() - mb.exp_avg()).abs().max().item<double>());
  }
  WARN("ResNet-18 fine_tune, " << steps << " steps on " << a.begin()->value().device() << ": "
                               << what << ", largest weight difference " << weight_gap
                               << ", largest first-moment difference " << moment_gap
                               << " (largest weight change " << moved << ")");
  CHECK(moved > 1e-3);  // the runs trained
  CHECK(weight_gap < tolerance);
  CHECK(moment_gap < tolerance);
  auto buffers_a = eager.model->named_buffers(), buffers_b = sync_free.model->named_buffers();
  for (const auto& item : buffers_a) {
    if (item.value().is_floating_point()) {
      CHECK((item.value() - buffers_b[item.key()]).abs().max().item<double>() < tolerance);
    }
  }
}

// The loss scaler on in fp32 too when `scaled` (a CPU cannot train in fp16): the device-side
// scale must scale, unscale and grow (every 2 clean steps) as GradScaler does.
FineTuneSetup with_scaler(bool scaled) {
  FineTuneSetup setup;
  if (scaled) setup.scaler = ltfit::GradScalerOptions{.enabled = true, .growth_interval = 2};
  return setup;
}

}  // namespace

TEST_CASE("the Trainer's sync-free step equals its eager step over a fine_tune",
          "[train][sync_free]") {
  ltfit::testing::TempDir dir;
  const auto samples = ltfit::testing::write_small_synth(dir.path(), 24, 2, 48, 80);
  // With the scaler on: 2^16 -> 2^19 over 6 steps.
  const bool scaled = GENERATE(false, true);
  INFO("loss scaler " << (scaled ? "on" : "off"));
  FineTuneSetup setup = with_scaler(scaled);
  const FineTuned eager = fine_tune(samples, setup);
  setup.sync_free = true;
  const FineTuned sync_free = fine_tune(samples, setup);
  if (scaled) CHECK(eager.scaler.scale == 65536.0 * 8);
  check_same_run(eager, sync_free, 1e-5);
}

TEST_CASE("the Trainer reads the loss once per interval as it reads it after each batch",
          "[train][sync_free]") {
  ltfit::testing::TempDir dir;
  const auto samples = ltfit::testing::write_small_synth(dir.path(), 24, 2, 48, 80);
  // One batch per step: 3 steps per epoch, read every 2 steps and at each epoch's end (steps 0
  // and 1 by the interval, 2 at the end; 3 and 4, 5; 6 and 7, 8).
  const bool scaled = GENERATE(false, true);
  INFO("loss scaler " << (scaled ? "on" : "off"));
  FineTuneSetup setup = with_scaler(scaled);
  setup.sync_free = true;
  setup.accumulate = 1;
  const FineTuned each_batch = fine_tune(samples, setup);
  setup.loss_read_interval = 2;
  const FineTuned per_interval = fine_tune(samples, setup);
  // The same arithmetic, read later only.
  check_same_run(each_batch, per_interval, 1e-12, 9, "loss read per interval against per batch");
  REQUIRE(per_interval.reported.size() == 9);
  REQUIRE(each_batch.reported.size() == 9);
  for (std::size_t i = 0; i < 9; ++i) {
    const ltfit::StepStats &a = each_batch.reported[i], &b = per_interval.reported[i];
    INFO("step " << i);
    CHECK(b.step == static_cast<std::int64_t>(i));
    CHECK(b.step == a.step);
    CHECK(b.epoch == a.epoch);
    CHECK(b.lrs == a.lrs);
    CHECK(b.momentum == a.momentum);
    CHECK(b.loss == a.loss);  // the host's arithmetic on the device, bit for bit
    CHECK(b.loss_scale == a.loss_scale);
  }
  REQUIRE(per_interval.train_losses.size() == 3);
  for (std::size_t e = 0; e < 3; ++e) {
    CHECK(per_interval.train_losses[e] == Approx(each_batch.train_losses[e]).epsilon(1e-12));
  }
  // A checkpoint voted mid-epoch (step 4 of 3..5; the smoothed loss restarts with the unfrozen
  // stage at 3) reads first: it holds the smoothed loss and the scale of that step, as after
  // each batch.
  setup.save_step = 4;
  setup.loss_read_interval = 0;
  const FineTuned saved_each_batch = fine_tune(samples, setup);
  setup.loss_read_interval = 100;
  const FineTuned saved_per_interval = fine_tune(samples, setup);
  CHECK(saved_each_batch.saved_position.loss_count == 2);  // the second stage's second step
  CHECK(saved_per_interval.saved_position.loss_count == 2);
  CHECK(saved_per_interval.saved_position.loss_avg ==
        Approx(saved_each_batch.saved_position.loss_avg).epsilon(1e-12));
  CHECK(saved_per_interval.saved_scaler.scale == saved_each_batch.saved_scaler.scale);
  CHECK(saved_per_interval.saved_scaler.growth_tracker ==
        saved_each_batch.saved_scaler.growth_tracker);
}

TEST_CASE("a non-finite loss read per interval stops the run as the per-batch check does",
          "[train][sync_free]") {
  ltfit::testing::TempDir dir;
  const auto samples = ltfit::testing::write_small_synth(dir.path(), 24, 2, 48, 80);
  // Batch 4 (epoch 1's second, step 4) gets NaN images; the next read is at step 5.
  FineTuneSetup setup;
  setup.sync_free = true;
  setup.accumulate = 1;
  setup.poison_batch = 4;
  std::string each_batch, per_interval;
  try {
    fine_tune(samples, setup);
  } catch (const ltfit::RuntimeError& e) {
    each_batch = e.what();
  }
  setup.loss_read_interval = 100;
  try {
    fine_tune(samples, setup);
  } catch (const ltfit::RuntimeError& e) {
    per_interval = e.what();
  }
  CHECK_THAT(each_batch, Catch::Contains("training loss became nan at step 4"));
  CHECK(per_interval == each_batch);
}

// On a GPU (gpu_check runs the [cuda] tests): the same fine_tune in fp16 with the Trainer's own
// loss scaler, where overflowing steps are skipped on the device; and the bare step under CUDA's
// sync debug mode set to error, where any device-to-host copy or synchronisation throws.
TEST_CASE("the Trainer's sync-free step equals its eager step in fp16 on CUDA",
          "[train][sync_free][cuda]") {
  REQUIRE(torch::cuda::is_available());
  ltfit::testing::TempDir dir;
  const auto samples = ltfit::testing::write_small_synth(dir.path(), 24, 2, 48, 80);
  FineTuneSetup setup{false, std::nullopt, torch::Device(torch::kCUDA, 0), ltfit::Precision::kFp16};
  const FineTuned eager = fine_tune(samples, setup);
  setup.sync_free = true;
  const FineTuned sync_free = fine_tune(samples, setup);
  check_same_run(eager, sync_free, 1e-3);  // fp16 forwards of weights 1e-6 apart
}

#ifdef LTFIT_HAS_CUDA_HEADERS
TEST_CASE("the sync-free step reads nothing from a CUDA device", "[train][sync_free][cuda]") {
  REQUIRE(torch::cuda::is_available());
  const torch::Device cuda(torch::kCUDA, 0);
  Groups groups = make_param_groups(3);
  for (auto& group : groups) {
    for (auto& p : group) p = p.detach().to(cuda).requires_grad_(true);
  }
  auto optimizer = ltfit::make_optimizer(fused_config(ltfit::OptimizerKind::kAdamW), groups);
  ltfit::SyncFreeStep step(*optimizer, {.enabled = true, .init_scale = 1024.0}, 0.5);
  struct SyncDebugError {  // c10's sync debug mode, restored however the block ends
    SyncDebugError() {
      c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR);
    }
    ~SyncDebugError() {
      c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
    }
  };
  // Steps 25 to 34: the frozen group starts getting gradients at 30, step 61's overflow is later.
  auto steps = [&](int from, int to) {
    for (int t = from; t < to; ++t) {
      set_gradients(groups, t, step.scale_loss(torch::ones({}, cuda)));
      step.set_hyper_parameters(step_lrs(t), step_momentum(t));
      step.step();
    }
  };
  {
    SyncDebugError no_reads;
    CHECK_NOTHROW(steps(25, 35));
  }
  CHECK_FALSE(step.last_step_skipped());
  for (const auto& group : groups) {
    for (const auto& p : group) CHECK(torch::isfinite(p).all().item<bool>());
  }
  // The check can fail: a read inside the mode throws.
  SyncDebugError no_reads;
  CHECK_THROWS(step.scaler_state());
}

// The whole training step, with the loss read per interval (here only at each epoch's end): from
// each batch's before_batch to its step's last after_step hook, under CUDA's sync debug mode set
// to error, nothing may read from the device or wait for it (the first batch, with the
// libraries' first calls, left out).
TEST_CASE("a training step with the loss read per interval reads nothing from a CUDA device",
          "[train][sync_free][cuda]") {
  REQUIRE(torch::cuda::is_available());
  ltfit::testing::TempDir dir;
  const auto samples = ltfit::testing::write_small_synth(dir.path(), 24, 2, 48, 80);
  struct SyncDebugHook : ltfit::Hook {
    int batches = 0, steps_checked = 0;
    int order() const override { return 1 << 20; }  // after every other hook
    void before_batch(ltfit::TrainContext& /*ctx*/) override {
      if (batches++ == 0) return;
      c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR);
    }
    void after_step(ltfit::TrainContext& /*ctx*/) override {
      if (c10::cuda::warning_state().get_sync_debug_mode() == c10::cuda::SyncDebugMode::L_ERROR) {
        ++steps_checked;
      }
      c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
    }
    ~SyncDebugHook() override {
      c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
    }
  } sync_debug;
  FineTuneSetup setup{false, std::nullopt, torch::Device(torch::kCUDA, 0), ltfit::Precision::kFp16};
  setup.sync_free = true;
  setup.accumulate = 1;
  setup.loss_read_interval = 100;
  setup.extra_hook = &sync_debug;
  const FineTuned run = fine_tune(samples, setup);
  CHECK(run.steps == 9);
  CHECK(sync_debug.steps_checked == 8);
  CHECK(run.reported.size() == 9);  // every step's loss read and reported
}
#endif
