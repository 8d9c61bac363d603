#include "ltfit/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <set>

#include <spdlog/spdlog.h>

#include "ltfit/eval/evaluator.h"
#include "ltfit/util/error.h"
#include "ltfit/util/stopwatch.h"

namespace ltfit {

namespace {

using Clock = std::chrono::steady_clock;

GradScalerOptions scaler_options(const TrainerOptions& options) {
  if (options.scaler) return *options.scaler;
  return GradScalerOptions{.enabled = precision_dtype(options.train.precision) == torch::kHalf};
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

std::int64_t TrainContext::stage_step() const {
  const std::int64_t done = state.position.batch_in_epoch / accumulate;  // steps of this epoch
  const std::int64_t planned = steps_per_epoch, have = steps_this_epoch;
  const std::int64_t in_epoch =
      have >= planned || have <= 1 ? done : (done * (planned - 1) + (have - 1) / 2) / (have - 1);
  return static_cast<std::int64_t>(state.position.epoch_in_stage) * steps_per_epoch + in_epoch;
}

Trainer::Trainer(Classifier model, torch::optim::Optimizer& optimizer, BatchSource& train,
                 Loader* valid, TrainerOptions options, std::vector<Hook*> hooks,
                 Profiler* profiler)
    : model_(std::move(model)),
      optimizer_(optimizer),
      train_(train),
      valid_(valid),
      options_(std::move(options)),
      feed_(options_.device, options_.train.channels_last, model_->input_normalization()),
      profiler_(profiler != nullptr ? profiler
                                    : &own_profiler_.emplace(options_.device, /*sync=*/false)),
      scaler_(scaler_options(options_)),
      hooks_(std::move(hooks)),
      ctx_(model_, optimizer_, scaler_, *profiler_, state_, options_.device,
           precision_dtype(options_.train.precision)) {
  if (options_.loss_read_interval > 0 && !options_.sync_free_step) {
    throw std::invalid_argument("TrainerOptions::loss_read_interval needs sync_free_step");
  }
  if (options_.sync_free_step) {
    if (options_.group != nullptr) {
      throw ConfigError("the sync-free step runs in one process, not in a data-parallel run");
    }
    hooks_.push_back(&sync_free_hook_.emplace(scaler_options(options_)));
  } else {
    hooks_.push_back(&scaler_hook_);
  }
  if (options_.loss_read_interval > 0) {
    step_losses_.emplace(options_.device);
    ctx_.loss_deferred = true;
  }
  hooks_.push_back(&loss_check_);
  std::stable_sort(hooks_.begin(), hooks_.end(),
                   [](const Hook* a, const Hook* b) { return a->order() < b->order(); });
  std::set<std::string> names;
  for (const Hook* hook : hooks_) {
    const std::string name = hook->state_name();
    if (!name.empty() && !names.insert(name).second) {
      throw RuntimeError("two training hooks keep their state under the name '" + name + "'");
    }
  }
  ctx_.hook_states = [this] {
    std::vector<HookState> states;
    for (const Hook* hook : hooks_) {
      if (hook->state_name().empty()) continue;
      states.push_back(hook->save_state());
      states.back().name = hook->state_name();
    }
    return states;
  };
}

void Trainer::restore_hook_states(const std::vector<HookState>& states) {
  for (const HookState& state : states) {
    const auto owner = std::find_if(hooks_.begin(), hooks_.end(),
                                    [&](const Hook* h) { return h->state_name() == state.name; });
    if (owner == hooks_.end()) {
      spdlog::warn("the checkpoint keeps the state of '{}', which this run does not use: ignored",
                   state.name);
      continue;
    }
    (*owner)->load_state(state);
  }
}

void Trainer::fire(void (Hook::*event)(TrainContext&)) {
  for (Hook* hook : hooks_) (hook->*event)(ctx_);
  if (ctx_.interrupt) {
    std::string message = *ctx_.interrupt;
    ctx_.interrupt.reset();
    throw InterruptedError(message);
  }
}

std::vector<EpochStats> Trainer::fit(const std::vector<StagePlan>& plan, const TrainState& start) {
  state_ = start;
  const bool fresh =
      start.global_step == 0 && start.global_epoch == 0 && start.position == TrainPosition{};
  if (fresh) {
    state_.scaler = scaler_.state();  // the scaler's own initial scale
  } else {
    scaler_.set_state(start.scaler);
  }
  ctx_.stop = false;
  std::vector<EpochStats> stats;
  fire(&Hook::fit_begin);
  restore_hook_states(start.hook_states);
  for (int s = start.position.stage; s < static_cast<int>(plan.size()) && !ctx_.stop; ++s) {
    if (s != start.position.stage) state_.position = {s, 0, 0, 0.0, 0};
    run_stage(plan[static_cast<std::size_t>(s)], stats);
  }
  fire(&Hook::fit_end);
  return stats;
}

void Trainer::run_stage(const StagePlan& stage, std::vector<EpochStats>& stats) {
  TrainPosition& at = state_.position;
  if (at.epoch_in_stage >= stage.epochs) return;  // resumed at this stage's very end
  set_body_frozen(model_, stage.frozen);
  ctx_.stage = &stage;
  ctx_.batches_per_epoch = train_.batches_per_epoch();
  if (ctx_.batches_per_epoch < 1) {
    throw DataError("the training set has fewer images than one batch (data.batch_size)",
                    "lower data.batch_size or add images");
  }
  ctx_.steps_per_epoch = ceil_div(ctx_.batches_per_epoch, ctx_.accumulate);
  fire(&Hook::stage_begin);
  while (at.epoch_in_stage < stage.epochs && !ctx_.stop) {
    const auto start = Clock::now();
    const double wait_before = profiler_->seconds(Phase::kDataWait);
    start_epoch();
    fire(&Hook::epoch_begin);
    const std::int64_t images = train_epoch();
    if (ctx_.stop) break;  // a hook ended the fit mid-epoch: no validation, no epoch record
    const double train_seconds = seconds_since(start);
    stats.push_back(validate_epoch(stage, profiler_->seconds(Phase::kDataWait) - wait_before));
    stats.back().images_per_second = static_cast<double>(images) / std::max(train_seconds, 1e-9);
    stats.back().image_size = train_.image_size_at(state_.global_epoch);
    stats.back().seconds = seconds_since(start);
    ++state_.global_epoch;
    ++at.epoch_in_stage;
    at.batch_in_epoch = 0;
    ctx_.epoch = &stats.back();
    fire(&Hook::epoch_end);
    ctx_.epoch = nullptr;
  }
  fire(&Hook::stage_end);
}

EpochStats Trainer::validate_epoch(const StagePlan& stage, double data_wait) {
  EpochStats epoch;
  epoch.epoch = state_.global_epoch;
  epoch.stage = stage.name;
  const TrainPosition& at = state_.position;
  const double count = static_cast<double>(at.loss_count);
  epoch.train_loss = count > 0 ? at.loss_avg / (1.0 - std::pow(kLossSmoothing, count)) : 0.0;
  epoch.data_wait_seconds = data_wait;
  ctx_.valid_accuracy.reset();
  if (valid_ == nullptr) {  // not measured (data.valid_pct 0): NaN, written as such
    epoch.valid_loss = epoch.accuracy = epoch.error_rate = std::nan("");
    return epoch;
  }
  ctx_.valid_batches = valid_->batches_per_epoch();
  fire(&Hook::validation_begin);
  EvalResult valid;
  {
    ScopedPhase phase(*profiler_, Phase::kValidation);
    const bool shard = options_.group != nullptr;
    valid = evaluate(model_, *valid_,
                     {options_.device, options_.train.channels_last, options_.train.precision,
                      shard, options_.thresholds, options_.eval.temperature, options_.eval.top_k});
    if (options_.group != nullptr) {
      valid = all_reduce_eval(valid, *options_.group, options_.thresholds);
    }
  }
  epoch.valid_loss = valid.loss;
  epoch.accuracy = valid.accuracy;
  epoch.error_rate = 1.0 - valid.accuracy;
  epoch.top_k = valid.top_k;
  epoch.top_k_accuracy = valid.top_k_accuracy;
  epoch.multi_label = valid.multi_label;
  epoch.f1_samples = valid.f1_samples;
  epoch.f1_macro = valid.f1_macro;
  epoch.map = valid.map;
  ctx_.valid_accuracy = valid.accuracy;
  fire(&Hook::validation_end);
  return epoch;
}

void Trainer::start_epoch() {
  // A new epoch leaves out every image found undecodable so far; a resumed one, what it left
  // out when it began (the checkpoint's), so it rebuilds the same batches.
  DecodeFailures& failures = state_.decode_failures;
  const std::int64_t first_batch = state_.position.batch_in_epoch;
  if (first_batch == 0) failures.left_out = failures.found;
  train_.leave_out(failures.left_out);
  train_.start_epoch(state_.global_epoch, first_batch);
  ctx_.batches_this_epoch = train_.epoch_batch_count();
  ctx_.steps_this_epoch = ceil_div(ctx_.batches_this_epoch, ctx_.accumulate);
}

std::int64_t Trainer::train_epoch() {
  TrainPosition& at = state_.position;
  const std::int64_t first_batch = at.batch_in_epoch;
  model_->train();
  optimizer_.zero_grad(/*set_to_none=*/true);
  ctx_.epoch_images = 0;
  std::int64_t drawn = 0;
  // Two batches in flight: batch k+1's copy to the device starts before batch k's step.
  for (std::optional<StagedBatch> next = next_staged(); next;) {
    const StagedBatch batch = std::move(*next);
    ++drawn;
    next = next_staged();
    one_batch(batch, /*last_of_epoch=*/!next);
    if (ctx_.stop) break;
  }
  // The epoch's steps not read yet: read for its record (the smoothed loss) and for the
  // checkpoint at its end; the observer hook reports them at its next event.
  if (step_losses_ && step_losses_->pending() > 0) read_losses();
  // An epoch that lost batches to images left out ends before batches_per_epoch: the schedule
  // (laid over the planned batches) continues from the next epoch's start.
  if (!ctx_.stop) share_decode_failures();
  if (drawn == 0 && first_batch == 0) {
    throw DataError(
        "no training image could be read in epoch " + std::to_string(state_.global_epoch),
        "check the images under data.root (the log names the unreadable ones)");
  }
  return ctx_.epoch_images;
}

std::optional<StagedBatch> Trainer::next_staged() {
  std::optional<Batch> batch;
  {
    ScopedPhase phase(*profiler_, Phase::kDataWait);
    batch = train_.next();
  }
  if (!batch) return std::nullopt;
  ScopedPhase phase(*profiler_, Phase::kHostToDevice);
  return feed_.stage(*batch);
}

// One batch, fastai's `_do_one_batch`: the hooks around each part are in hooks.h.
// `last_of_epoch`: the loader has no batch after this one. An epoch that left images out may
// end before its planned last batch, and then this batch closes its accumulation group.
void Trainer::one_batch(const StagedBatch& batch, bool last_of_epoch) {
  TrainContext& c = ctx_;
  TrainPosition& at = state_.position;
  const std::int64_t group_start = at.batch_in_epoch / c.accumulate * c.accumulate;
  c.batch_in_step = static_cast<int>(at.batch_in_epoch - group_start);
  c.batches_in_step =
      static_cast<int>(std::min<std::int64_t>(c.accumulate, c.batches_this_epoch - group_start));
  c.step_now = c.batch_in_step + 1 >= c.batches_in_step || last_of_epoch;
  // The group's losses were divided by its planned size; a group cut short is rescaled to the
  // mean of the batches it had, as a planned short last group is.
  const double cut_short =
      c.step_now ? static_cast<double>(c.batches_in_step) / static_cast<double>(c.batch_in_step + 1)
                 : 1.0;
  c.cancel_batch = c.skip_step = false;
  c.targets = torch::Tensor();
  if (c.batch_in_step == 0) c.step_loss = 0.0;
  {
    ScopedPhase phase(*profiler_, Phase::kHostToDevice);
    feed_.use(batch);
    c.images = batch.images;
    c.labels = batch.labels;
  }
  // A data-parallel rank whose slice had no readable image runs no forward and no backward but
  // fires every event, so it meets the other ranks at the same collectives (hooks.h).
  const bool empty = c.labels.size(0) == 0;
  fire(&Hook::before_batch);
  forward_and_loss(empty);
  c.loss_value = c.loss_deferred ? std::nan("") : c.loss.item<double>();
  fire(&Hook::after_loss);
  if (c.cancel_batch) {
    optimizer_.zero_grad(/*set_to_none=*/true);
    return;
  }
  c.epoch_images += c.labels.size(0);
  if (c.loss_deferred) {
    if (!empty) step_losses_->add_batch(c.loss, c.batches_in_step);
  } else {
    c.step_loss += c.loss_value / c.batches_in_step;
    if (c.step_now) c.step_loss *= cut_short;
    // An fp16 overflow must not poison the smoothed loss.
    if (!empty && std::isfinite(c.loss_value)) add_to_smoothed_loss(at, c.loss_value);
  }
  if (!empty) {
    ScopedPhase phase(*profiler_, Phase::kBackward);
    c.backward_loss.backward();
  }
  if (cut_short != 1.0) rescale_gradients(cut_short);
  ++at.batch_in_epoch;
  fire(&Hook::after_backward);
  if (!c.step_now) return;  // accumulating: the gradients add up until the group's last batch
  fire(&Hook::before_step);
  optimizer_step();
  ++state_.global_step;
  if (c.loss_deferred) close_step(cut_short);
  if (c.vote_save || c.vote_stop) share_decode_failures();  // the checkpoint holds them
  fire(&Hook::after_step);
}

// The optimizer's step (the sync-free one with TrainerOptions::sync_free_step), unless a hook
// asked to skip it, then the gradients cleared.
void Trainer::optimizer_step() {
  ScopedPhase phase(*profiler_, Phase::kOptimizer);
  if (!ctx_.skip_step) {
    if (ctx_.sync_free_step != nullptr) {
      ctx_.sync_free_step->step();
    } else {
      optimizer_.step();
    }
  }
  optimizer_.zero_grad(/*set_to_none=*/true);
}

void Trainer::share_decode_failures() {
  std::vector<std::int64_t>& found = state_.decode_failures.found;
  const std::vector<std::int64_t> mine = train_.found_unreadable();
  std::vector<std::int64_t> all;
  std::set_union(found.begin(), found.end(), mine.begin(), mine.end(), std::back_inserter(all));
  DistGroup* group = options_.group;
  if (group != nullptr && group->any(all.size() != found.size())) {
    // Positions as a 0/1 map over the sample list, summed over the ranks.
    torch::Tensor map = torch::zeros({train_.sample_count()}, torch::kInt32);
    for (const std::int64_t p : all) map[p] = 1;
    std::vector<torch::Tensor> tensors{map.to(group->device())};
    group->all_reduce_sum(tensors);
    const torch::Tensor summed = tensors[0].cpu();
    const auto* counts = summed.const_data_ptr<std::int32_t>();
    all.clear();
    for (std::int64_t p = 0; p < summed.numel(); ++p)
      if (counts[p] > 0) all.push_back(p);
  }
  found = std::move(all);
}

void set_body_frozen(Classifier& model, bool frozen) {
  auto groups = model->layer_group_parameters();
  for (std::size_t g = 0; g + 1 < groups.size(); ++g) {
    for (auto& p : groups[g]) p.set_requires_grad(!frozen);
  }
  // Normalisation layers (BatchNorm, LayerNorm) train even in a frozen body (fastai's train_bn).
  for (auto& p : model->normalization_parameters()) p.set_requires_grad(true);
}

void Trainer::rescale_gradients(double factor) {
  torch::NoGradGuard no_grad;
  for (auto& group : optimizer_.param_groups()) {
    for (auto& p : group.params()) {
      if (p.grad().defined()) p.grad().mul_(factor);
    }
  }
}

}  // namespace ltfit
