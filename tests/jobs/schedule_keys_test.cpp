// schedule_key_changes: every key a run's schedule or epoch plan depends on is reported with its
// old and new value; the keys a resume may change (workers, checkpoint cadence, time limit,
// device, ...) are not.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "ltfit/config/config_loader.h"
#include "ltfit/jobs/schedule_keys.h"

namespace {

ltfit::Config with(const std::vector<std::string>& sets) {
  std::vector<ltfit::Override> overrides;
  for (const std::string& s : sets) overrides.push_back(ltfit::parse_override(s));
  return ltfit::load_config_from_string("run: {name: s}\n", "schedule_keys_test", overrides);
}

}  // namespace

TEST_CASE("schedule_key_changes names each schedule key that changed, old and new", "[jobs]") {
  const ltfit::Config base = with({});
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"train.recipe=one_cycle", "train.recipe fine_tune -> one_cycle"},
      {"train.epochs=5", "train.epochs 3 -> 5"},
      {"train.freeze_epochs=2", "train.freeze_epochs 1 -> 2"},
      {"train.lr=[1.0e-5,1.0e-3]", "train.lr [0.001] -> [1e-05, 0.001]"},
      {"train.one_cycle.pct_start=0.25", "train.one_cycle.pct_start 0.3 -> 0.25"},
      {"train.one_cycle.div=10", "train.one_cycle.div 25 -> 10"},
      {"train.schedule=cosine", "train.schedule one_cycle -> cosine"},
      {"train.warmup_epochs=2", "train.warmup_epochs 0 -> 2"},
      {"train.decay_milestones=[3]", "train.decay_milestones [] -> [3]"},
      {"train.one_cycle.div_final=1.0e4", "train.one_cycle.div_final 100000 -> 10000"},
      {"train.one_cycle.moms=[0.9,0.8,0.9]",
       "train.one_cycle.moms [0.95, 0.85, 0.95] -> [0.9, 0.8, 0.9]"},
      {"train.accumulate=2", "train.accumulate 1 -> 2"},
      {"data.batch_size=24", "data.batch_size 16 -> 24"},
      {"data.subset=0.5", "data.subset 1 -> 0.5"},
      {"data.layout=kaggle", "data.layout auto -> kaggle"},
      {"data.valid_count=100", "data.valid_count 0 -> 100"},
      {"run.seed=7", "run.seed 42 -> 7"},
  };
  for (const auto& [set, expected] : cases) {
    INFO(set);
    const auto changes = ltfit::schedule_key_changes(base, with({set}));
    REQUIRE(changes.size() == 1);
    CHECK(ltfit::describe_changes(changes) == expected);
  }
  // train.frozen goes with one_cycle only (fine_tune with a frozen body is refused at load time).
  const ltfit::Config cycle = with({"train.recipe=one_cycle"});
  CHECK(ltfit::describe_changes(ltfit::schedule_key_changes(
            cycle, with({"train.recipe=one_cycle", "train.frozen=true"}))) ==
        "train.frozen false -> true");
  const auto two = ltfit::schedule_key_changes(base, with({"data.batch_size=8", "train.epochs=1"}));
  CHECK(ltfit::describe_changes(two) == "train.epochs 3 -> 1, data.batch_size 16 -> 8");
}

TEST_CASE("schedule_key_changes ignores the keys a resume may change", "[jobs]") {
  const ltfit::Config base = with({});
  for (const std::string set :
       {"data.workers=3", "train.checkpoint.every_minutes=1", "train.checkpoint.keep=4",
        "train.time_limit=5h50m", "train.device=cpu", "train.profile=true", "run.tensorboard=false",
        "eval.tta=false", "data.root=/elsewhere", "train.epochs=3", "data.batch_size=16"}) {
    INFO(set);
    CHECK(ltfit::schedule_key_changes(base, with({set})).empty());
  }
}
