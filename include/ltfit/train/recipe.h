// Training recipes as data: which stages run, frozen or not, with which peak LRs.
//
// Pure functions of TrainConfig (tested against fastai's definitions: learner.fine_tune,
// fit_one_cycle):
//   one_cycle: one stage, `epochs` epochs, body unfrozen, LRs from train.lr; with train.frozen
//     the body stays frozen and a single LR v gives [v/10, v/10, v] (fastai v1's slice(v)).
//   fine_tune (fastai v2): a frozen stage of `freeze_epochs` at slice(base) with pct_start 0.99,
//     then base /= 2, unfreeze, `epochs` epochs at slice(base/100, base), div 5; base = train.lr's
//     last value. A two-value train.lr [low, high] gives the unfrozen stage's slice directly.
#pragma once

#include <string>
#include <vector>

#include "ltfit/config/config.h"
#include "ltfit/train/schedule.h"

namespace ltfit {

constexpr int kLayerGroups = 3;  // body[:6], body[6:], head

struct StagePlan {
  std::string name;               // "one_cycle" | "frozen" | "unfrozen"
  int epochs = 1;                 // epochs in this stage
  bool frozen = false;            // body frozen (its BatchNorm layers still train)
  std::vector<double> group_lrs;  // peak LR per layer group
  ScheduleConfig schedule;        // the stage's LR schedule
};

// Peak LR per layer group, fastai's lr_range: one value -> the same for every group;
// [low, high] -> geometric from low to high; `slice_of_one` -> [v/10, ..., v/10, v].
std::vector<double> spread_lrs(const std::vector<double>& lr, int groups, bool slice_of_one);

// The stages `train.recipe` runs, in order.
std::vector<StagePlan> plan_recipe(const TrainConfig& train);

// Total epochs over all stages.
int total_epochs(const std::vector<StagePlan>& plan);

}  // namespace ltfit
