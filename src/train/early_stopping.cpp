// Early stopping: see early_stopping.h.
#include "ltfit/train/early_stopping.h"

#include <cmath>
#include <limits>

#include <spdlog/spdlog.h>

#include "ltfit/util/error.h"

namespace ltfit {

namespace {

double start_value(Monitor monitor) {
  const double inf = std::numeric_limits<double>::infinity();
  return lower_is_better(monitor) ? inf : -inf;
}

}  // namespace

EarlyStoppingHook::EarlyStoppingHook(EarlyStoppingConfig config) : config_(config) {
  if (config_.patience < 1) {
    throw ConfigError("train.early_stopping.patience must be at least 1 to stop early, got " +
                      std::to_string(config_.patience));
  }
}

void EarlyStoppingHook::stage_begin(TrainContext& ctx) {
  const int stage = ctx.state.position.stage;
  if (pending_) {
    const HookState state = *pending_;
    pending_.reset();
    stopped_ = state.scalars.at("stopped") != 0.0;
    if (stopped_) {
      reason_ = "the run had stopped early before this session (train.early_stopping)";
      spdlog::info("early stopping: {}; nothing more is trained", reason_);
      ctx.stop = true;
      return;
    }
    if (static_cast<int>(state.scalars.at("stage")) == stage) {
      best_ = state.scalars.at("has_best") != 0.0 ? state.scalars.at("best")
                                                  : start_value(config_.monitor);
      wait_ = static_cast<int>(state.scalars.at("wait"));
      stage_ = stage;
      return;
    }
  }
  best_ = start_value(config_.monitor);  // fastai's reset_on_fit: each stage afresh
  wait_ = 0;
  stage_ = stage;
}

void EarlyStoppingHook::epoch_end(TrainContext& ctx) {
  const double value = monitor_value(*ctx.epoch, config_.monitor);
  // TrackerCallback: comp(value - min_delta, best), min_delta negated for "lower is better".
  const bool better = lower_is_better(config_.monitor) ? value + config_.min_delta < best_
                                                       : value - config_.min_delta > best_;
  if (better) {
    best_ = value;
    wait_ = 0;
    return;
  }
  if (++wait_ < config_.patience) return;
  stopped_ = true;
  reason_ = fmt::format(
      "no improvement of {} for {} epoch(s) (best {:.6g}, min_delta {:g}): early stopping after "
      "epoch {} (counted from 0, as epochs.csv)",
      monitor_name(config_.monitor), wait_, best_, config_.min_delta,
      ctx.state.global_epoch - 1);  // the epoch that just ended; global_epoch counts it already
  spdlog::info("early stopping: {}", reason_);
  ctx.stop = true;
}

HookState EarlyStoppingHook::save_state() const {
  HookState state;
  state.name = state_name();
  state.version = 1;
  const bool has_best = std::isfinite(best_);  // none yet: ±inf, kept out of the file
  state.scalars = {{"best", has_best ? best_ : 0.0},
                   {"has_best", has_best ? 1.0 : 0.0},
                   {"wait", static_cast<double>(wait_)},
                   {"stage", static_cast<double>(stage_)},
                   {"stopped", stopped_ ? 1.0 : 0.0}};
  return state;
}

void EarlyStoppingHook::load_state(const HookState& state) {
  if (state.version != 1) {
    throw CheckpointError("the checkpoint's early_stopping state has version " +
                              std::to_string(state.version) + "; this ltfit reads version 1",
                          "use the ltfit that wrote it, or a newer one");
  }
  for (const char* key : {"best", "has_best", "wait", "stage", "stopped"}) {
    const auto found = state.scalars.find(key);
    const bool ok = found != state.scalars.end() && std::isfinite(found->second) &&
                    (std::string(key) == "best" || (found->second >= -1 && found->second < 1e9));
    if (!ok) {
      throw CheckpointError(
          std::string("the checkpoint's early_stopping state has no valid '") + key + "'",
          "resume from another checkpoint, or start a new run");
    }
  }
  pending_ = state;
}

bool stopped_early(const std::vector<HookState>& states) {
  for (const HookState& s : states) {
    if (s.name != "early_stopping") continue;
    const auto found = s.scalars.find("stopped");
    return found != s.scalars.end() && found->second != 0.0;
  }
  return false;
}

}  // namespace ltfit
