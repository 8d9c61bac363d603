#include "ltfit/train/schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>

#include "ltfit/train/one_cycle.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

std::int64_t clamp_step(std::int64_t step, std::int64_t total) {
  return std::clamp<std::int64_t>(step, 0, std::max<std::int64_t>(total - 1, 0));
}

class OneCycle final : public Schedule {
 public:
  OneCycle(const OneCycleConfig& c, std::int64_t total)
      : shape_{total, 1.0, c.pct_start, c.div, c.div_final, c.moms[0], c.moms[1], c.moms[2]} {}
  double lr(double peak, std::int64_t step) const override {
    OneCycleSchedule at_peak = shape_;
    at_peak.lr_max = peak;
    return lr_at(at_peak, step);
  }
  double momentum(std::int64_t step) const override { return momentum_at(shape_, step); }

 private:
  OneCycleSchedule shape_;
};

class FlatCos final : public Schedule {
 public:
  FlatCos(const FlatCosConfig& c, std::int64_t total, double momentum)
      : config_(c), total_(std::max<std::int64_t>(total, 1)), momentum_(momentum) {}
  double lr(double peak, std::int64_t step) const override {
    const double pos = static_cast<double>(clamp_step(step, total_)) / static_cast<double>(total_);
    const double pct = config_.pct_start;
    if (pos < pct) return peak;
    return cos_anneal(peak, peak / config_.div_final, (pos - pct) / (1.0 - pct));
  }
  double momentum(std::int64_t /*step*/) const override { return momentum_; }

 private:
  FlatCosConfig config_;
  std::int64_t total_;
  double momentum_;
};

// The schedules that warm up linearly first (timm's warmup_t / warmup_lr_init, warmup_prefix
// false: the warm-up's steps count in the schedule's own).
class WarmedUp : public Schedule {
 public:
  WarmedUp(const ScheduleConfig& c, std::int64_t total, std::int64_t steps_per_epoch)
      : config_(c),
        total_(std::max<std::int64_t>(total, 1)),
        steps_per_epoch_(std::max<std::int64_t>(steps_per_epoch, 1)),
        warmup_(std::llround(c.warmup_epochs * static_cast<double>(steps_per_epoch_))) {}
  double lr(double peak, std::int64_t step) const final {
    step = clamp_step(step, total_);
    if (step < warmup_) {
      return config_.warmup_lr +
             static_cast<double>(step) * (peak - config_.warmup_lr) / static_cast<double>(warmup_);
    }
    return after_warmup(peak, step);
  }
  double momentum(std::int64_t /*step*/) const final { return config_.base_momentum; }

 protected:
  virtual double after_warmup(double peak, std::int64_t step) const = 0;
  ScheduleConfig config_;
  std::int64_t total_, steps_per_epoch_, warmup_;
};

class Cosine final : public WarmedUp {
 public:
  using WarmedUp::WarmedUp;

 private:
  double after_warmup(double peak, std::int64_t step) const override {
    const double t = static_cast<double>(step) / static_cast<double>(total_);
    return config_.min_lr + 0.5 * (peak - config_.min_lr) * (1.0 + std::cos(std::numbers::pi * t));
  }
};

class Multistep final : public WarmedUp {
 public:
  using WarmedUp::WarmedUp;

 private:
  double after_warmup(double peak, std::int64_t step) const override {
    const double epoch = static_cast<double>(step / steps_per_epoch_);
    const auto& m = config_.decay_milestones;
    const auto decays = std::upper_bound(m.begin(), m.end(), epoch) - m.begin();
    return peak * std::pow(config_.decay_rate, static_cast<double>(decays));
  }
};

class Constant final : public WarmedUp {
 public:
  using WarmedUp::WarmedUp;

 private:
  double after_warmup(double peak, std::int64_t /*step*/) const override { return peak; }
};

class Plateau final : public WarmedUp {
 public:
  Plateau(const ScheduleConfig& c, std::int64_t total, std::int64_t steps_per_epoch)
      : WarmedUp(c, total, steps_per_epoch),
        max_(!lower_is_better(c.plateau_monitor)),
        best_(max_ ? -std::numeric_limits<double>::infinity()
                   : std::numeric_limits<double>::infinity()) {}

  void epoch_end(std::int64_t steps_done, std::optional<double> value) override {
    // timm steps ReduceLROnPlateau only once the warm-up is over; torch's logic from there
    // (threshold_mode rel: mode min needs a < best·(1 − 1e-4), mode max a > best·(1 + 1e-4)).
    if (steps_done <= warmup_ || !value || !std::isfinite(*value)) return;
    if (max_ ? *value > best_ * (1.0 + kThreshold) : *value < best_ * (1.0 - kThreshold)) {
      best_ = *value;
      bad_epochs_ = 0;
    } else {
      ++bad_epochs_;
    }
    if (cooldown_left_ > 0) {
      --cooldown_left_;
      bad_epochs_ = 0;
    }
    if (bad_epochs_ > config_.patience_epochs) {
      ++decays_;
      cooldown_left_ = config_.cooldown_epochs;
      bad_epochs_ = 0;
    }
  }
  std::map<std::string, double> state() const override {
    return {{"best", best_},
            {"bad_epochs", static_cast<double>(bad_epochs_)},
            {"cooldown_left", static_cast<double>(cooldown_left_)},
            {"decays", static_cast<double>(decays_)}};
  }
  void load(const std::map<std::string, double>& state) override {
    // The value of `key`, which `valid` must accept.
    const auto value = [&](const char* key, auto valid) {
      const auto it = state.find(key);
      if (it == state.end() || !valid(it->second)) {
        throw CheckpointError(
            std::string("the plateau schedule's saved state has no valid '") + key + "'",
            "use another checkpoint (checkpoints/last.ckpt or best.ckpt)");
      }
      return it->second;
    };
    const auto count = [](double v) { return v >= 0 && v <= 1e9 && v == std::floor(v); };
    bad_epochs_ = static_cast<int>(value("bad_epochs", count));
    cooldown_left_ = static_cast<int>(value("cooldown_left", count));
    decays_ = static_cast<int>(value("decays", count));
    best_ = value("best", [](double v) { return !std::isnan(v); });
  }

 private:
  static constexpr double kThreshold = 1e-4;  // torch's, relative
  double after_warmup(double peak, std::int64_t /*step*/) const override {
    return std::max(peak * std::pow(config_.decay_rate, decays_), config_.min_lr);
  }
  bool max_;  // mode max (accuracy): higher is better
  double best_;
  int bad_epochs_ = 0, cooldown_left_ = 0, decays_ = 0;
};

}  // namespace

ScheduleConfig schedule_config(const TrainConfig& t) {
  ScheduleConfig config;
  static_cast<LrScheduleKeys&>(config) = t;
  config.base_momentum = t.optimizer.betas.empty() ? 0.9 : t.optimizer.betas.front();
  return config;
}

std::unique_ptr<Schedule> make_schedule(const ScheduleConfig& config, std::int64_t total_steps,
                                        std::int64_t steps_per_epoch) {
  switch (config.schedule) {
    case ScheduleKind::kOneCycle:
      return std::make_unique<OneCycle>(config.one_cycle, total_steps);
    case ScheduleKind::kFlatCos:
      return std::make_unique<FlatCos>(config.flat_cos, total_steps, config.base_momentum);
    case ScheduleKind::kCosine:
      return std::make_unique<Cosine>(config, total_steps, steps_per_epoch);
    case ScheduleKind::kMultistep:
      return std::make_unique<Multistep>(config, total_steps, steps_per_epoch);
    case ScheduleKind::kPlateau:
      return std::make_unique<Plateau>(config, total_steps, steps_per_epoch);
    case ScheduleKind::kConstant:
      return std::make_unique<Constant>(config, total_steps, steps_per_epoch);
  }
  throw RuntimeError("unknown schedule kind");
}

}  // namespace ltfit
