#include "ltfit/train/one_cycle.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace ltfit {

namespace {

// Position of `step` within its phase: (is_warmup, fraction done).
struct CyclePhase {
  bool warmup;
  double pct;
};

CyclePhase phase_of(const OneCycleSchedule& s, std::int64_t step) {
  const std::int64_t n = std::max<std::int64_t>(s.total_steps, 1);
  step = std::clamp<std::int64_t>(step, 0, n - 1);
  const std::int64_t w = warmup_steps(s);
  if (step < w) return {true, static_cast<double>(step) / static_cast<double>(w)};
  const std::int64_t rest = std::max<std::int64_t>(n - w, 1);
  return {false, static_cast<double>(step - w) / static_cast<double>(rest)};
}

}  // namespace

double cos_anneal(double start, double end, double pct) {
  return end + (start - end) / 2.0 * (std::cos(std::numbers::pi * pct) + 1.0);
}

std::int64_t warmup_steps(const OneCycleSchedule& s) {
  const auto w = static_cast<std::int64_t>(static_cast<double>(s.total_steps) * s.pct_start);
  if (s.total_steps > 1) return std::clamp<std::int64_t>(w, 1, s.total_steps - 1);
  return 0;
}

double lr_at(const OneCycleSchedule& s, std::int64_t step) {
  const CyclePhase p = phase_of(s, step);
  if (p.warmup) return cos_anneal(s.lr_max / s.div, s.lr_max, p.pct);
  return cos_anneal(s.lr_max, s.lr_max / s.div_final, p.pct);
}

double momentum_at(const OneCycleSchedule& s, std::int64_t step) {
  const CyclePhase p = phase_of(s, step);
  if (p.warmup) return cos_anneal(s.mom_start, s.mom_mid, p.pct);
  return cos_anneal(s.mom_mid, s.mom_end, p.pct);
}

}  // namespace ltfit
