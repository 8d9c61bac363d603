// Recipes and LR spreading against fastai's definitions (fastai's learner.fine_tune and
// fit_one_cycle).
#include <catch2/catch.hpp>

#include <cmath>

#include "ltfit/train/recipe.h"

TEST_CASE("spread_lrs follows fastai's lr_range", "[train][recipe]") {
  using ltfit::spread_lrs;
  // A number: the same LR for every group.
  CHECK(spread_lrs({1e-3}, 3, false) == std::vector<double>{1e-3, 1e-3, 1e-3});
  // slice(b): b/10 for all but the last group.
  const auto one = spread_lrs({1e-3}, 3, true);
  CHECK(one[0] == Approx(1e-4));
  CHECK(one[1] == Approx(1e-4));
  CHECK(one[2] == Approx(1e-3));
  // slice(a, b): geometric, [a, sqrt(ab), b].
  const auto range = spread_lrs({1e-5, 1e-3}, 3, false);
  CHECK(range[0] == Approx(1e-5));
  CHECK(range[1] == Approx(std::sqrt(1e-5 * 1e-3)));
  CHECK(range[2] == Approx(1e-3));
}

TEST_CASE("one_cycle is one unfrozen stage with the configured shape", "[train][recipe]") {
  ltfit::TrainConfig train;
  train.recipe = ltfit::Recipe::kOneCycle;
  train.epochs = 4;
  train.lr = {2e-3};
  const auto plan = ltfit::plan_recipe(train);
  REQUIRE(plan.size() == 1);
  CHECK_FALSE(plan[0].frozen);
  CHECK(plan[0].epochs == 4);
  CHECK(plan[0].group_lrs == std::vector<double>{2e-3, 2e-3, 2e-3});
  CHECK(plan[0].schedule.one_cycle.pct_start == Approx(0.3));
  CHECK(ltfit::total_epochs(plan) == 4);
  // train.frozen: fastai v1's fit_one_cycle(4, slice(2e-3)) on a freshly created cnn learner.
  train.frozen = true;
  const auto frozen = ltfit::plan_recipe(train);
  REQUIRE(frozen.size() == 1);
  CHECK(frozen[0].frozen);
  CHECK(frozen[0].group_lrs[0] == Approx(2e-4));
  CHECK(frozen[0].group_lrs[1] == Approx(2e-4));
  CHECK(frozen[0].group_lrs[2] == Approx(2e-3));
}

TEST_CASE("fine_tune is fastai v2's: frozen slice(base) at pct 0.99, then slice(base/200, base/2)",
          "[train][recipe]") {
  ltfit::TrainConfig train;
  train.recipe = ltfit::Recipe::kFineTune;
  train.epochs = 3;
  train.freeze_epochs = 1;
  train.lr = {2e-3};
  const auto plan = ltfit::plan_recipe(train);
  REQUIRE(plan.size() == 2);
  CHECK(plan[0].frozen);
  CHECK(plan[0].epochs == 1);
  CHECK(plan[0].schedule.one_cycle.pct_start == Approx(0.99));
  CHECK(plan[0].group_lrs[0] == Approx(2e-4));
  CHECK(plan[0].group_lrs[2] == Approx(2e-3));
  CHECK_FALSE(plan[1].frozen);
  CHECK(plan[1].epochs == 3);
  CHECK(plan[1].schedule.one_cycle.div == Approx(5.0));
  CHECK(plan[1].group_lrs[0] == Approx(1e-5));
  CHECK(plan[1].group_lrs[2] == Approx(1e-3));
  CHECK(ltfit::total_epochs(plan) == 4);
}
