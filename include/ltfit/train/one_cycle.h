// fastai's one-cycle schedule as pure functions of the step (fastai's fit_one_cycle).
//
// With n total steps and warm-up w = int(n * pct_start):
//   step s <  w: lr = cos_anneal(lr_max / div, lr_max, s / w),        mom: moms[0] -> moms[1]
//   step s >= w: lr = cos_anneal(lr_max, lr_max / div_final, (s-w)/(n-w)), mom: moms[1] -> moms[2]
// where cos_anneal(a, b, p) = b + (a - b) / 2 * (cos(pi * p) + 1). This is fastai v1's
// OneCycleScheduler (annealing_cos per phase, stepped after each batch); `div_final` is the
// ratio lr_max / final LR (fastai v2's name; v1's div * final_div).
#pragma once

#include <cstdint>

namespace ltfit {

struct OneCycleSchedule {
  std::int64_t total_steps = 1;  // batches x epochs, >= 1
  double lr_max = 1e-3;          // peak learning rate
  double pct_start = 0.3;        // fraction of steps warming up
  double div = 25.0;             // start LR = lr_max / div
  double div_final = 1e5;        // final LR = lr_max / div_final
  double mom_start = 0.95;       // momentum (Adam beta1) at step 0
  double mom_mid = 0.85;         // momentum at the peak LR
  double mom_end = 0.95;         // momentum at the last step
};

// Cosine interpolation from `start` (pct 0) to `end` (pct 1).
double cos_anneal(double start, double end, double pct);

// Steps spent warming up: int(total_steps * pct_start), at least 1 when total_steps > 1.
std::int64_t warmup_steps(const OneCycleSchedule& schedule);

// Learning rate at 0-based step `step` (clamped to [0, total_steps - 1]).
double lr_at(const OneCycleSchedule& schedule, std::int64_t step);

// Momentum (Adam beta1 / SGD momentum) at 0-based step `step`.
double momentum_at(const OneCycleSchedule& schedule, std::int64_t step);

}  // namespace ltfit
