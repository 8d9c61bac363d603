// The optimizer step with its state on the device (train/sync_free_step.h) against today's eager
// step over 120 one-cycle steps: FusedAdamW and FusedSGD with discriminative LRs, cycling
// momentum and weight decay, fp16 loss scaling (GradScaler on the host: overflow steps skipped,
// backoff and growth), gradient clipping, and a layer group frozen for the first steps. The
// parameters, moments, step counts and the scaler's state must agree; the loss meter must give
// the trainer's smoothed loss. (That it reads nothing from the device is what a CUDA graph needs;
// on a GPU, a [cuda] case runs the step under CUDA's sync debug mode.) Then the Trainer with
// TrainerOptions::sync_free_step against the eager Trainer: a ResNet-18 fine_tune on real JPEGs,
// on the CPU and, tagged [cuda], in fp16 on a GPU.
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
#include "ltfit/util/cuda_build.h"
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
  ltfit::DeviceLossMeter meter(torch::kCPU);
  double average = 0.0, count = 0.0;  // the trainer's smoothed loss, on the host
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
    meter.add(loss);
    average = 0.98 * average + 0.02 * eager_loss.item<double>();
    ++count;
    if (t == 20) meter.add(torch::full({}, std::nan("")));  // left out, as the trainer does
  }
  double gap = 0.0;
  for (std::size_t i = 0; i < eager.front().size(); ++i)
    gap = std::max(gap, (eager[0][i] - graphed[0][i]).abs().max().item<double>());
  WARN("a conv net, AdamW, 40 steps: sync-free against eager, largest difference " << gap);
  CHECK(gap < 1e-5);
  const ltfit::DeviceLossMeter::Reading reading = meter.read();
  CHECK(reading.count == 40);
  CHECK(reading.smoothed == Approx(average / (1.0 - std::pow(0.98, count))).epsilon(1e-5));
  CHECK(meter.read().count == 0);  // read resets the interval, not the smoothing
  CHECK(step.scaler_state().scale == 1.0);
}

namespace {

// A ResNet-18 after fastai's fine_tune (1 frozen epoch, 2 unfrozen) on 24 JPEGs at 32 px, batch
// 8, two batches per step (the epoch's last group short), clipping at 0.5: the eager Trainer or
// the sync-free one, from the same initial weights, on the same (unshuffled) batches.
struct FineTuned {
  ltfit::Classifier model;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::int64_t steps = 0;
  ltfit::GradScalerState scaler;
  std::vector<double> loss_scales;  // each step's, as steps.csv reports it
};

struct FineTuneSetup {
  bool sync_free = false;
  std::optional<ltfit::GradScalerOptions> scaler;  // the Trainer's default when unset
  torch::Device device = torch::kCPU;
  ltfit::Precision precision = ltfit::Precision::kFp32;
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
  FineTuned run{initial_resnet18(), nullptr};
  run.model->to(setup.device);
  run.optimizer =
      ltfit::make_optimizer(ltfit::OptimizerConfig{}, run.model->layer_group_parameters());
  ltfit::ScheduleHook schedule;
  ltfit::AccumulateHook accumulate(2);
  ltfit::ClipGradHook clip(0.5);
  struct LossScales : ltfit::TrainObserver {
    std::vector<double>& out;
    explicit LossScales(std::vector<double>& o) : out(o) {}
    void on_step(const ltfit::StepStats& s) override { out.push_back(s.loss_scale); }
  } loss_scales(run.loss_scales);
  ltfit::ObserverHook observe(loss_scales);
  ltfit::TrainerOptions options;
  options.device = setup.device;
  options.train.precision = setup.precision;
  options.sync_free_step = setup.sync_free;
  options.scaler = setup.scaler;
  ltfit::Trainer trainer(run.model, *run.optimizer, train, nullptr, options,
                         {&schedule, &accumulate, &clip, &observe});
  const std::vector<double> lrs{2e-4, 2e-3, 2e-2};
  trainer.fit({{"frozen", 1, true, lrs, ltfit::ScheduleConfig{}},
               {"unfrozen", 2, false, lrs, ltfit::ScheduleConfig{}}});
  run.steps = trainer.state().global_step;
  run.scaler = trainer.state().scaler;
  return run;
}

// The two runs agree: steps, the scaler, the weights and first moments within `tolerance`, the
// BatchNorm statistics, and the AdamW step counts (written back: a checkpoint would be the same).
void check_same_run(const FineTuned& eager, const FineTuned& sync_free, double tolerance) {
  CHECK(eager.steps == 6);  // 3 epochs of 2 steps
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
  WARN("ResNet-18 fine_tune, 6 steps on "
       << a.begin()->value().device() << ": sync-free against eager, largest weight difference "
       << weight_gap << ", largest first-moment difference " << moment_gap
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

}  // namespace

TEST_CASE("the Trainer's sync-free step equals its eager step over a fine_tune",
          "[train][sync_free]") {
  ltfit::testing::TempDir dir;
  const auto samples = ltfit::testing::write_small_synth(dir.path(), 24, 2, 48, 80);
  // The loss scaler on in fp32 too (a CPU cannot train in fp16): the device-side scale must
  // scale, unscale and grow (every 2 clean steps: 2^16 -> 2^19 over 6 steps) as GradScaler does.
  const bool scaled = GENERATE(false, true);
  FineTuneSetup setup;
  if (scaled) setup.scaler = ltfit::GradScalerOptions{.enabled = true, .growth_interval = 2};
  INFO("loss scaler " << (scaled ? "on" : "off"));
  const FineTuned eager = fine_tune(samples, setup);
  setup.sync_free = true;
  const FineTuned sync_free = fine_tune(samples, setup);
  if (scaled) CHECK(eager.scaler.scale == 65536.0 * 8);
  check_same_run(eager, sync_free, 1e-5);
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
#endif
