// Which schedule keys two configs set differently: see schedule_keys.h.
#include "ltfit/jobs/schedule_keys.h"

#include <functional>

#include <fmt/format.h>

namespace ltfit {

namespace {

struct ScheduleKey {
  const char* key;
  std::function<std::string(const Config&)> value;
};

std::string number(double v) { return fmt::format("{}", v); }

std::string numbers(const std::vector<double>& v) {
  std::string text = "[";
  for (std::size_t i = 0; i < v.size(); ++i) text += (i ? ", " : "") + number(v[i]);
  return text + "]";
}

const std::vector<ScheduleKey>& schedule_keys() {
  static const std::vector<ScheduleKey> keys = {
      {"train.recipe", [](const Config& c) { return recipe_name(c.train.recipe); }},
      {"train.epochs", [](const Config& c) { return std::to_string(c.train.epochs); }},
      {"train.freeze_epochs",
       [](const Config& c) { return std::to_string(c.train.freeze_epochs); }},
      {"train.frozen",
       [](const Config& c) { return std::string(c.train.frozen ? "true" : "false"); }},
      {"train.lr", [](const Config& c) { return numbers(c.train.lr); }},
      {"train.one_cycle.pct_start",
       [](const Config& c) { return number(c.train.one_cycle.pct_start); }},
      {"train.one_cycle.div", [](const Config& c) { return number(c.train.one_cycle.div); }},
      {"train.one_cycle.div_final",
       [](const Config& c) { return number(c.train.one_cycle.div_final); }},
      {"train.one_cycle.moms", [](const Config& c) { return numbers(c.train.one_cycle.moms); }},
      {"train.schedule", [](const Config& c) { return schedule_kind_name(c.train.schedule); }},
      {"train.flat_cos.pct_start",
       [](const Config& c) { return number(c.train.flat_cos.pct_start); }},
      {"train.flat_cos.div_final",
       [](const Config& c) { return number(c.train.flat_cos.div_final); }},
      {"train.warmup_epochs", [](const Config& c) { return number(c.train.warmup_epochs); }},
      {"train.warmup_lr", [](const Config& c) { return number(c.train.warmup_lr); }},
      {"train.min_lr", [](const Config& c) { return number(c.train.min_lr); }},
      {"train.decay_milestones", [](const Config& c) { return numbers(c.train.decay_milestones); }},
      {"train.decay_rate", [](const Config& c) { return number(c.train.decay_rate); }},
      {"train.patience_epochs",
       [](const Config& c) { return std::to_string(c.train.patience_epochs); }},
      {"train.cooldown_epochs",
       [](const Config& c) { return std::to_string(c.train.cooldown_epochs); }},
      {"train.plateau_monitor",
       [](const Config& c) { return monitor_name(c.train.plateau_monitor); }},
      {"train.accumulate", [](const Config& c) { return std::to_string(c.train.accumulate); }},
      {"data.batch_size", [](const Config& c) { return std::to_string(c.data.batch_size); }},
      {"data.subset", [](const Config& c) { return number(c.data.subset); }},
      {"data.layout", [](const Config& c) { return data_layout_name(c.data.layout); }},
      {"data.valid_count", [](const Config& c) { return std::to_string(c.data.valid_count); }},
      {"run.seed", [](const Config& c) { return std::to_string(c.run.seed); }},
  };
  return keys;
}

}  // namespace

std::vector<KeyChange> schedule_key_changes(const Config& before, const Config& after) {
  std::vector<KeyChange> changes;
  for (const ScheduleKey& k : schedule_keys()) {
    std::string a = k.value(before);
    std::string b = k.value(after);
    if (a != b) changes.push_back({k.key, std::move(a), std::move(b)});
  }
  return changes;
}

std::string describe_changes(const std::vector<KeyChange>& changes) {
  std::string text;
  for (const KeyChange& c : changes) {
    text += (text.empty() ? "" : ", ") + c.key + " " + c.before + " -> " + c.after;
  }
  return text;
}

}  // namespace ltfit
