#include "ltfit/train/recipe.h"

#include <cmath>

#include "ltfit/util/error.h"

namespace ltfit {

namespace {

constexpr double kFineTuneFrozenPctStart = 0.99;  // fastai v2 fine_tune
constexpr double kFineTuneDiv = 5.0;              // fastai v2 fine_tune: unfrozen div
constexpr double kFineTuneLrMult = 100.0;         // fastai v2 fine_tune: slice(base/100, base)

}  // namespace

std::vector<double> spread_lrs(const std::vector<double>& lr, int groups, bool slice_of_one) {
  LTFIT_CHECK(!lr.empty() && lr.size() <= 2 && groups >= 1, "lr must hold one or two values");
  std::vector<double> lrs(static_cast<std::size_t>(groups));
  if (lr.size() == 1) {
    const double v = lr[0];
    for (auto& x : lrs) x = slice_of_one ? v / 10.0 : v;
    lrs.back() = v;
    return lrs;
  }
  const double low = lr[0], high = lr[1];
  for (int i = 0; i < groups; ++i) {
    const double t = groups == 1 ? 1.0 : static_cast<double>(i) / (groups - 1);
    lrs[static_cast<std::size_t>(i)] = low * std::pow(high / low, t);
  }
  return lrs;
}

std::vector<StagePlan> plan_recipe(const TrainConfig& train) {
  const ScheduleConfig schedule = schedule_config(train);
  if (train.recipe == Recipe::kOneCycle) {
    // Frozen, a single LR is fastai v1's slice(lr): lr/10 for the body's BatchNorm layers.
    return {{"one_cycle", train.epochs, train.frozen,
             spread_lrs(train.lr, kLayerGroups, /*slice_of_one=*/train.frozen), schedule}};
  }
  // fine_tune's own one-cycle shapes (fastai v2's fine_tune); other schedules run as configured.
  std::vector<StagePlan> plan;
  double base = train.lr.back();
  if (train.freeze_epochs > 0) {
    ScheduleConfig frozen_shape = schedule;
    frozen_shape.one_cycle.pct_start = kFineTuneFrozenPctStart;
    plan.push_back({"frozen", train.freeze_epochs, true,
                    spread_lrs({base}, kLayerGroups, /*slice_of_one=*/true), frozen_shape});
  }
  base /= 2.0;
  ScheduleConfig unfrozen_shape = schedule;
  unfrozen_shape.one_cycle.div = kFineTuneDiv;
  const std::vector<double> slice =
      train.lr.size() == 2 ? train.lr : std::vector<double>{base / kFineTuneLrMult, base};
  plan.push_back(
      {"unfrozen", train.epochs, false, spread_lrs(slice, kLayerGroups, false), unfrozen_shape});
  return plan;
}

int total_epochs(const std::vector<StagePlan>& plan) {
  int total = 0;
  for (const auto& stage : plan) total += stage.epochs;
  return total;
}

}  // namespace ltfit
