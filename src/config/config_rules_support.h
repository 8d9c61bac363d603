// The config rules' reporting helpers (src/config only, never installed), shared by
// config_rules.cpp and config_rules_labels.cpp: the Rules reporter, `require`, and the texts a
// broken rule shows. Pure functions, thread-safe.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "config/config_internal.h"

namespace ltfit::config_internal {

// "[0.9, 0.99]", each number in its shortest exact text.
inline std::string format_list(const std::vector<double>& values) {
  std::vector<std::string> texts;
  for (double v : values) texts.push_back(format_number(v));
  std::string text = "[";  // built in steps: GCC 12 warns falsely (-Wrestrict) on "[" + s + "]"
  text += join(texts);
  text += "]";
  return text;
}

// The rules' reporter: reports a broken rule through `fail` (which throws or collects). When
// listing (describe_rules), every rule reports, broken or not, to a `fail` that collects.
struct Rules {
  Fail fail;
  bool list_all = false;
  void operator()(const Problem& problem) const { fail(problem); }
};

inline std::string show(int value) { return std::to_string(value); }
inline std::string show(double value) { return format_number(value); }
inline std::string show(const std::string& value) { return "'" + value + "'"; }
inline std::string show(const std::vector<double>& value) { return format_list(value); }

template <typename T>
void require(const Rules& fail, bool ok, const std::string& path, const std::string& expected,
             const T& value) {
  if (!ok || fail.list_all) fail({path, expected, show(value), ""});
}

inline void require_one_of(const Rules& fail, const std::string& path, const std::string& value,
                           const std::vector<std::string>& choices) {
  const bool ok = std::find(choices.begin(), choices.end(), value) != choices.end();
  if (ok && !fail.list_all) return;
  const std::string suggestion = closest(value, choices);
  fail({path, "one of " + join(choices), show(value),
        suggestion.empty() ? "" : "did you mean '" + suggestion + "'?"});
}

inline bool all_in(const std::vector<double>& values, double low, double high, bool high_included) {
  return std::all_of(values.begin(), values.end(),
                     [&](double v) { return v >= low && (high_included ? v <= high : v < high); });
}

// The labels' rules (config_rules_labels.cpp): data.layout's keys (csv, label_pattern,
// valid_pct, the split folders), model.task, train.pos_weight, eval.threshold(s) and the monitors
// only a multi-label task has.
void validate_labels(const Config& config, const Rules& fail);

}  // namespace ltfit::config_internal
