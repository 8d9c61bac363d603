// One-cycle values against fastai v1's OneCycleScheduler, computed in Python with fastai's
// annealing_cos (n=100, lr_max=3e-3, pct_start=0.3, div=25, final 1e5, moms 0.95/0.85/0.95).
#include <algorithm>

#include <catch2/catch.hpp>

#include "ltfit/train/one_cycle.h"

using ltfit::OneCycleSchedule;

namespace {

OneCycleSchedule reference_schedule() {
  OneCycleSchedule s;
  s.total_steps = 100;
  s.lr_max = 3e-3;
  s.pct_start = 0.3;
  s.div = 25.0;
  s.div_final = 1e5;
  return s;
}

}  // namespace

TEST_CASE("one-cycle LR and momentum equal fastai's at chosen steps", "[train][one_cycle]") {
  const OneCycleSchedule s = reference_schedule();
  struct Expected {
    std::int64_t step;
    double lr;
    double mom;
  };
  const Expected expected[] = {
      {0, 0.00011999999999999988, 0.95},
      {1, 0.00012788847066968643, 0.9497260947684136},
      {15, 0.00156, 0.8999999999999999},
      {29, 0.0029921115293303135, 0.8502739052315863},
      {30, 0.003, 0.85},
      {31, 0.002998489614915974, 0.8500503466729342},
      {50, 0.0024352403504410724, 0.8688255099070633},
      {99, 1.5403850840262358e-06, 0.9499496533270657},
  };
  for (const auto& e : expected) {
    INFO("step " << e.step);
    CHECK(ltfit::lr_at(s, e.step) == Approx(e.lr).epsilon(1e-12));
    CHECK(ltfit::momentum_at(s, e.step) == Approx(e.mom).epsilon(1e-12));
  }
}

TEST_CASE("one-cycle warms up for int(n * pct_start) steps, then anneals down",
          "[train][one_cycle]") {
  const OneCycleSchedule s = reference_schedule();
  CHECK(ltfit::warmup_steps(s) == 30);
  for (std::int64_t i = 1; i < 30; ++i) CHECK(ltfit::lr_at(s, i) > ltfit::lr_at(s, i - 1));
  for (std::int64_t i = 31; i < 100; ++i) CHECK(ltfit::lr_at(s, i) < ltfit::lr_at(s, i - 1));
  CHECK(ltfit::lr_at(s, 30) == Approx(s.lr_max));
  // Steps past the end stay at the last value instead of wrapping around.
  CHECK(ltfit::lr_at(s, 500) == ltfit::lr_at(s, 99));
}

TEST_CASE("cos_anneal goes from start to end", "[train][one_cycle]") {
  CHECK(ltfit::cos_anneal(1.0, 3.0, 0.0) == Approx(1.0));
  CHECK(ltfit::cos_anneal(1.0, 3.0, 0.5) == Approx(2.0));
  CHECK(ltfit::cos_anneal(1.0, 3.0, 1.0) == Approx(3.0));
}

TEST_CASE("a one-step schedule is usable", "[train][one_cycle]") {
  OneCycleSchedule s = reference_schedule();
  s.total_steps = 1;
  CHECK(ltfit::warmup_steps(s) == 0);
  CHECK(ltfit::lr_at(s, 0) == Approx(s.lr_max));
}

// torch.optim.lr_scheduler.OneCycleLR(max_lr=3e-3, total_steps=100, pct_start=0.3,
// anneal_strategy='cos', div_factor=25, final_div_factor=1e5/25, base_momentum=0.85,
// max_momentum=0.95), values read from optimizer.param_groups[0] before each step (torch 2.15).
// torch warms up over pct_start*n - 1 = 29 steps, fastai over int(pct_start*n) = 30, so the two
// coincide at step 0 and at the peak, and fastai's annealing phase is torch's one step later:
// fastai(s + 1) == torch(s) for s >= 29. torch reaches lr_max / div_final at its last step;
// fastai stops one step before it.
TEST_CASE("one-cycle coincides with torch's OneCycleLR where the definitions agree",
          "[train][one_cycle]") {
  const OneCycleSchedule s = reference_schedule();
  struct TorchValue {
    std::int64_t step;
    double lr;
    double mom;
  };
  const TorchValue torch_values[] = {
      {0, 0.00011999999999999988, 0.95},
      {29, 0.003, 0.85},
      {30, 0.002998489614915974, 0.8500503466729342},
      {50, 0.0023816840616599252, 0.8706107373853763},
      {98, 1.5403850840262358e-06, 0.9499496533270657},
  };
  // Step 0: start LR lr_max / div and the top momentum.
  CHECK(ltfit::lr_at(s, 0) == Approx(torch_values[0].lr).epsilon(1e-12));
  CHECK(ltfit::momentum_at(s, 0) == Approx(torch_values[0].mom).epsilon(1e-12));
  // The peak: the same LR and momentum, at fastai's step 30 and torch's step 29.
  CHECK(ltfit::lr_at(s, 30) == Approx(torch_values[1].lr).epsilon(1e-12));
  CHECK(ltfit::momentum_at(s, 30) == Approx(torch_values[1].mom).epsilon(1e-12));
  double highest = 0;
  for (std::int64_t i = 0; i < s.total_steps; ++i) highest = std::max(highest, ltfit::lr_at(s, i));
  CHECK(highest == Approx(torch_values[1].lr).epsilon(1e-12));
  // Annealing: fastai one step behind torch.
  for (const auto& t : torch_values) {
    if (t.step < 29) continue;
    INFO("torch step " << t.step);
    CHECK(ltfit::lr_at(s, t.step + 1) == Approx(t.lr).epsilon(1e-12));
    CHECK(ltfit::momentum_at(s, t.step + 1) == Approx(t.mom).epsilon(1e-12));
  }
  // torch's final LR is lr_max / div_final, which fastai's schedule approaches from above.
  const double torch_final = 3.0000000000000004e-08;
  CHECK(torch_final == Approx(s.lr_max / s.div_final).epsilon(1e-12));
  CHECK(ltfit::lr_at(s, s.total_steps - 1) > torch_final);
}
