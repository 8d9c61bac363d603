// One-cycle values against fastai v1's OneCycleScheduler, computed in Python with fastai's
// annealing_cos (n=100, lr_max=3e-3, pct_start=0.3, div=25, final 1e5, moms 0.95/0.85/0.95).
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
