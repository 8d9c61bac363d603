// The labels' rules (config_rules_support.h): where a dataset keeps its labels (data.layout's
// csv, label_pattern, valid_pct and split folders), the task (model.task) and what only one task
// has (train.class_weights is single-label's, train.pos_weight, eval.threshold(s) and the F1 and
// mAP monitors multi-label's). No yaml-cpp here. Thread-safe: no shared state.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "config/config_rules_support.h"
#include "ltfit/util/name_pattern.h"

namespace ltfit {

bool is_multi_label(const Config& config) {
  switch (config.model.task) {
    case Task::kSingleLabel:
      return false;
    case Task::kMultiLabel:
      return true;
    case Task::kAuto:
      break;
  }
  return config.data.csv.label_delim.has_value();
}

namespace config_internal {
namespace {

constexpr std::size_t kMaxPatternBytes = 1000;
constexpr std::size_t kMaxDelimiterBytes = 16;

// A relative path that stays inside data.root: no leading '/', no '..' component, no NUL.
bool stays_inside(const std::string& path) {
  if (path.find('\0') != std::string::npos || (!path.empty() && path.front() == '/')) return false;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    if (path.compare(start, end - start, "..") == 0) return false;
    start = end + 1;
  }
  return true;
}

bool single_component(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

// The number of capture groups, or -1 when `pattern` is not an RE2 regular expression.
int capture_groups(const std::string& pattern) { return NamePattern(pattern).groups(); }

void validate_csv(const CsvConfig& csv, const Rules& fail) {
  require(fail, !csv.file.empty() && csv.file.find('\0') == std::string::npos, "data.csv.file",
          "the CSV file's path (relative to data.root, or absolute)", csv.file);
  require(fail, !csv.path_column.empty(), "data.csv.path_column",
          "a column name, or its 0-based index", csv.path_column);
  require(fail, !csv.label_column.empty(), "data.csv.label_column",
          "a column name, or its 0-based index", csv.label_column);
  const std::string valid = csv.valid_column.value_or("x");
  require(fail, !valid.empty(), "data.csv.valid_column",
          "null, a column name, or its 0-based index", valid);
  const std::string delim = csv.label_delim.value_or(" ");
  require(fail, !delim.empty() && delim.size() <= kMaxDelimiterBytes, "data.csv.label_delim",
          "null, or a separator of 1 to 16 bytes (e.g. ' ' or ';')", delim);
  require(fail, stays_inside(csv.folder), "data.csv.folder",
          "a relative folder inside data.root (no leading '/', no '..')", csv.folder);
  require(fail,
          csv.suffix.find('/') == std::string::npos && csv.suffix.find('\0') == std::string::npos,
          "data.csv.suffix", "a file-name ending such as .jpg (no '/')", csv.suffix);
}

void validate_layout_keys(const DataConfig& data, const Rules& fail) {
  validate_csv(data.csv, fail);
  const int groups =
      data.label_pattern.size() <= kMaxPatternBytes ? capture_groups(data.label_pattern) : -1;
  require(fail, groups >= 1, "data.label_pattern",
          "a regular expression (RE2 syntax, at most 1000 bytes) with a group, whose first "
          "group of a full match of the file name is the label, e.g. '^(.+)_\\d+\\.jpg$'",
          data.label_pattern);
  require(fail, data.valid_pct >= 0 && data.valid_pct < 1, "data.valid_pct",
          "a fraction in [0, 1) (0: no validation split, every image trains)", data.valid_pct);
  require(fail, single_component(data.train_folder), "data.train_folder",
          "one folder name under data.root", data.train_folder);
  require(fail, single_component(data.valid_folder) && data.valid_folder != data.train_folder,
          "data.valid_folder", "one folder name under data.root, other than data.train_folder",
          data.valid_folder);
}

// A key that only one task uses, set under the other: refused with what to use instead.
void refuse_for_task(const Rules& fail, bool wrong, const std::string& key, const std::string& task,
                     const std::string& found, const std::string& hint) {
  if (wrong || fail.list_all) {
    fail({key, "its default under model.task " + task, found, hint});
  }
}

void validate_task_keys(const Config& config, const Rules& fail) {
  const bool multi = is_multi_label(config);
  const TrainConfig& train = config.train;
  const bool weights = train.class_weights.kind != ClassWeights::Kind::kNone;
  refuse_for_task(fail, multi && weights, "train.class_weights", "multi_label", "set",
                  "a multi-label run weighs each class's positives with train.pos_weight");
  const bool pos = train.pos_weight.kind != ClassWeights::Kind::kNone;
  refuse_for_task(fail, !multi && pos, "train.pos_weight", "single_label", "set",
                  "train.pos_weight weighs binary cross-entropy (model.task: multi_label, or "
                  "data.csv.label_delim); a single-label run has train.class_weights");
  const auto& w = train.pos_weight.weights;
  const bool finite = std::all_of(w.begin(), w.end(),
                                  [](double v) { return std::isfinite(v) && v >= 0 && v <= 1e6; });
  require(fail, train.pos_weight.kind != ClassWeights::Kind::kList || (!w.empty() && finite),
          "train.pos_weight", "null, balanced, or one number in [0, 1e6] per class", w);
  refuse_for_task(fail, multi && config.eval.top_k != 0, "eval.top_k", "multi_label",
                  show(config.eval.top_k),
                  "top-k accuracy is a single-label figure; a multi-label run reports "
                  "f1_samples, f1_macro and map");
  const struct {
    const char* key;
    Monitor monitor;
  } monitors[] = {{"train.best_monitor", train.best_monitor},
                  {"train.early_stopping.monitor", train.early_stopping.monitor},
                  {"train.plateau_monitor", train.plateau_monitor}};
  for (const auto& m : monitors) {
    refuse_for_task(fail, !multi && multi_label_monitor(m.monitor), m.key, "single_label",
                    "'" + monitor_name(m.monitor) + "'",
                    "f1_samples, f1_macro and map are multi-label figures; use accuracy or "
                    "valid_loss");
  }
}

void validate_thresholds(const EvalConfig& eval, const Rules& fail) {
  require(fail, all_in(eval.thresholds, 0, 1, true), "eval.thresholds",
          "null, or one probability in [0, 1] per class", eval.thresholds);
}

}  // namespace

void validate_labels(const Config& config, const Rules& fail) {
  validate_layout_keys(config.data, fail);
  validate_task_keys(config, fail);
  validate_thresholds(config.eval, fail);
}

}  // namespace config_internal
}  // namespace ltfit
