#include "ltfit/train/lr_finder.h"

#include <cmath>

#include <spdlog/spdlog.h>

#include "ltfit/data/loader.h"
#include "ltfit/train/checkpoint.h"
#include "ltfit/train/hooks.h"
#include "ltfit/train/optimizer.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

constexpr std::size_t kSkipStart = 10;  // fastai v1 Recorder.plot defaults
constexpr std::size_t kSkipEnd = 5;
constexpr double kLrFindMomentum = 0.9;

// Snapshot of everything lr_find changes, restored on destruction (also on exceptions).
class StateGuard {
 public:
  StateGuard(Classifier& model, torch::optim::Optimizer& optimizer)
      : model_(model), optimizer_(optimizer), was_training_(model->is_training()) {
    torch::NoGradGuard no_grad;
    for (const auto& p : model->parameters()) params_.push_back(p.detach().clone());
    for (const auto& b : model->buffers()) buffers_.push_back(b.detach().clone());
    optimizer_state_ = save_optimizer_state(optimizer);
  }
  ~StateGuard() {
    torch::NoGradGuard no_grad;
    auto params = model_->parameters();
    for (std::size_t i = 0; i < params.size(); ++i) params[i].copy_(params_[i]);
    auto buffers = model_->buffers();
    for (std::size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(buffers_[i]);
    try {
      load_optimizer_state(optimizer_, optimizer_state_);
    } catch (const std::exception& e) {  // our own bytes: a bug, but a destructor must not throw
      spdlog::error("lr_find could not restore the optimizer's state: {}", e.what());
    }
    model_->train(was_training_);
  }
  StateGuard(const StateGuard&) = delete;
  StateGuard& operator=(const StateGuard&) = delete;

 private:
  Classifier& model_;
  torch::optim::Optimizer& optimizer_;
  bool was_training_;
  std::vector<torch::Tensor> params_, buffers_;
  std::string optimizer_state_;  // save_optimizer_state()
};

}  // namespace

double lr_find_lr(const LrFindOptions& o, std::int64_t step) {
  return o.start_lr * std::pow(o.end_lr / o.start_lr,
                               static_cast<double>(step) / static_cast<double>(o.num_steps));
}

std::optional<double> suggest_steepest(const std::vector<double>& lrs,
                                       const std::vector<double>& smoothed) {
  if (smoothed.size() < kSkipStart + kSkipEnd + 2) return std::nullopt;
  const std::size_t begin = kSkipStart, end = smoothed.size() - kSkipEnd;
  std::size_t best = begin;
  double best_gradient = INFINITY;
  for (std::size_t i = begin; i < end; ++i) {  // numpy.gradient: central, one-sided at the ends
    const double g = i == begin     ? smoothed[i + 1] - smoothed[i]
                     : i + 1 == end ? smoothed[i] - smoothed[i - 1]
                                    : (smoothed[i + 1] - smoothed[i - 1]) / 2.0;
    if (g < best_gradient) best_gradient = g, best = i;
  }
  return lrs[best];
}

std::optional<double> suggest_valley(const std::vector<double>& all_lrs,
                                     const std::vector<double>& all_smoothed) {
  // fastai v2 drops the first num_it // 10 and the last 5 points before looking for the valley.
  if (all_smoothed.size() < kSkipStart + kSkipEnd + 2) return std::nullopt;
  const std::vector<double> lrs(all_lrs.begin() + kSkipStart, all_lrs.end() - kSkipEnd);
  const std::vector<double> smoothed(all_smoothed.begin() + kSkipStart,
                                     all_smoothed.end() - kSkipEnd);
  const std::size_t n = smoothed.size();
  std::vector<std::size_t> run(n, 1);  // longest decreasing subsequence ending at i
  std::size_t max_start = 0, max_end = 0;
  for (std::size_t i = 1; i < n; ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (smoothed[i] < smoothed[j] && run[i] < run[j] + 1) run[i] = run[j] + 1;
      if (run[max_end] < run[i]) {
        max_end = i;
        max_start = max_end - run[max_end];
      }
    }
  }
  const double sections = static_cast<double>(max_end - max_start) / 3.0;
  const std::size_t idx =
      max_start + static_cast<std::size_t>(sections) + static_cast<std::size_t>(sections / 2.0);
  return lrs[std::min(idx, n - 1)];
}

namespace {

// fastai's LRFinder callback: an exponential LR for every group, the smoothed loss recorded
// after each forward, and the fit ended at num_steps or on divergence (before that batch's
// backward, so the diverged step never updates the weights).
class LrFinderHook : public Hook {
 public:
  LrFinderHook(const LrFindOptions& options, LrFindResult& result)
      : options_(options), result_(result) {}
  int order() const override { return hook_order::kSchedule; }

  void before_batch(TrainContext& ctx) override {
    const std::int64_t step = ctx.state.global_step;
    const double lr = lr_find_lr(options_, step);
    ctx.lrs.assign(ctx.optimizer.param_groups().size(), lr);
    ctx.momentum = kLrFindMomentum;
    set_hyper_parameters(ctx.optimizer, ctx.lrs, ctx.momentum);
  }

  void after_loss(TrainContext& ctx) override {
    const double value = ctx.loss_value;
    const auto step = static_cast<double>(result_.lrs.size() + 1);
    average_ = options_.beta * average_ + (1.0 - options_.beta) * value;
    const double smooth = average_ / (1.0 - std::pow(options_.beta, step));
    result_.lrs.push_back(ctx.lrs.front());
    result_.losses.push_back(value);
    result_.smoothed.push_back(smooth);
    if (!std::isfinite(smooth) || smooth > options_.stop_factor * best_) {
      result_.diverged = true;
      ctx.cancel_batch = ctx.stop = true;
      return;
    }
    best_ = std::min(best_, smooth);
  }

  void after_step(TrainContext& ctx) override {
    if (ctx.state.global_step >= options_.num_steps) ctx.stop = true;
  }

 private:
  const LrFindOptions& options_;
  LrFindResult& result_;
  double average_ = 0.0;
  double best_ = INFINITY;
};

}  // namespace

LrFindResult lr_find(Classifier& model, torch::optim::Optimizer& optimizer, BatchSource& train,
                     const TrainerOptions& trainer, const LrFindOptions& options,
                     const std::vector<Hook*>& extra_hooks) {
  StateGuard restore(model, optimizer);
  LrFindResult result;
  LrFinderHook finder(options, result);
  std::vector<Hook*> hooks = extra_hooks;
  hooks.push_back(&finder);
  const std::int64_t batches = std::max<std::int64_t>(1, train.batches_per_epoch());
  StagePlan sweep;
  sweep.name = "lr_find";
  sweep.frozen = options.frozen;
  sweep.epochs = static_cast<int>((options.num_steps + batches - 1) / batches);
  Trainer sweeper(model, optimizer, train, /*valid=*/nullptr, trainer, hooks);
  sweeper.fit({sweep});
  result.frozen = options.frozen;
  result.steepest = suggest_steepest(result.lrs, result.smoothed);
  result.valley = suggest_valley(result.lrs, result.smoothed);
  return result;
}

}  // namespace ltfit
