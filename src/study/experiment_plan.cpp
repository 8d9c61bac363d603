// Reading experiment plans and study files (experiment_plan.h).
//
// Like config_loader.cpp, the only readers of these YAML trees: each file is checked for its
// shape (maps, required keys, unknown keys with a "did you mean") and every error names the
// file, the 1-based line and the key path. Thread-safe: no shared state.
#include "ltfit/study/experiment_plan.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "config/config_internal.h"
#include "ltfit/util/error.h"
#include "ltfit/util/input_file.h"

namespace ltfit {
namespace {

namespace fs = std::filesystem;
using config_internal::closest;
using config_internal::join;

// A node and its key path ("runs[2].set") in the file `source`.
struct Located {
  YAML::Node node;
  std::string path;
  const std::string* source;
};

int line_of(const YAML::Node& node) {
  return node.IsDefined() && !node.Mark().is_null() ? node.Mark().line + 1 : 0;
}

[[noreturn]] void fail(const Located& at, const std::string& what, const std::string& hint = "") {
  const int line = line_of(at.node);
  const std::string where = *at.source + (line > 0 ? ":" + std::to_string(line) : "");
  throw ConfigError(where + ": " + (at.path.empty() ? "" : at.path + ": ") + what, hint);
}

std::string describe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "null";
  if (node.IsScalar()) return "'" + node.Scalar() + "'";
  return node.IsMap() ? "a map" : "a list";
}

Located child(const Located& parent, const std::string& key) {
  Located result{YAML::Node(YAML::NodeType::Undefined),
                 parent.path.empty() ? key : parent.path + "." + key, parent.source};
  if (parent.node.IsMap()) {
    const YAML::Node& map = parent.node;  // const lookup: never inserts
    const YAML::Node value = map[key];
    if (value.IsDefined()) result.node.reset(value);
  }
  return result;
}

// `at` must be a map whose keys are all in `keys`.
void expect_map(const Located& at, const std::vector<std::string>& keys) {
  if (!at.node.IsMap())
    fail(at, "expected a map with keys " + join(keys) + ", got " + describe(at.node));
  for (const auto& entry : at.node) {
    const std::string key = entry.first.Scalar();
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
    const std::string suggestion = closest(key, keys);
    const Located where{entry.first, at.path.empty() ? key : at.path + "." + key, at.source};
    fail(where,
         suggestion.empty() ? "unknown key" : "unknown key; did you mean '" + suggestion + "'?",
         "valid keys here: " + join(keys));
  }
}

std::string read_string(const Located& at, bool required, const std::string& fallback = "") {
  if (!at.node.IsDefined() || at.node.IsNull()) {
    if (required) fail(at, "is required");
    return fallback;
  }
  if (!at.node.IsScalar()) fail(at, "expected a string, got " + describe(at.node));
  return at.node.Scalar();
}

std::int64_t read_count(const Located& at) {
  const std::string text = read_string(at, /*required=*/true);
  const bool digits = !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) {
    return std::isdigit(c) != 0;
  });
  if (!digits || text.size() > 12) fail(at, "expected a non-negative integer, got '" + text + "'");
  return std::stoll(text);
}

// [A-Za-z0-9._-]+, not "." or "..": safe as a directory name and in CSV.
std::string read_id(const Located& at) {
  const std::string id = read_string(at, /*required=*/true);
  const bool safe = std::all_of(id.begin(), id.end(), [](unsigned char c) {
    return std::isalnum(c) != 0 || c == '.' || c == '_' || c == '-';
  });
  if (!safe || id.empty() || id == "." || id == "..") {
    fail(at, "expected an id of letters, digits, '.', '_' and '-', got '" + id + "'");
  }
  return id;
}

// A `set:` value as `--set` text: scalars as written (quoted ones re-quoted), lists in flow style.
std::string override_text(const Located& at) {
  const YAML::Node& node = at.node;
  if (node.IsNull()) return "null";
  if (node.IsScalar()) {
    if (node.Tag() != "!") return node.Scalar();
    std::string quoted = "'";
    for (const char c : node.Scalar()) quoted += c == '\'' ? std::string("''") : std::string(1, c);
    return quoted + "'";
  }
  const bool flat_list = node.IsSequence() && std::all_of(node.begin(), node.end(), [](auto item) {
                           return item.IsScalar();
                         });
  if (!flat_list) {
    fail(at, "expected a value or a list of values, got " + describe(node),
         "write nested keys dotted: data.augment.flip: false");
  }
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

// A `set:` map of dotted keys to values; absent or null: none.
std::vector<Override> read_overrides(const Located& at) {
  std::vector<Override> overrides;
  if (!at.node.IsDefined() || at.node.IsNull()) return overrides;
  if (!at.node.IsMap()) {
    fail(at,
         "expected a map of config keys to values (data.batch_size: 64), got " + describe(at.node));
  }
  for (const auto& entry : at.node) {
    const std::string key = entry.first.Scalar();
    const Located value{entry.second, at.path + "." + key, at.source};
    const bool dotted = key.find('.') != std::string::npos && key.front() != '.' &&
                        key.back() != '.' && key.find("..") == std::string::npos;
    if (!dotted) {
      fail(Located{entry.first, value.path, at.source},
           "expected a dotted config key like data.batch_size");
    }
    overrides.push_back(Override{key, override_text(value)});
  }
  return overrides;
}

PlanRun read_run(const Located& at) {
  expect_map(at, {"id", "label", "study_run", "set"});
  PlanRun run;
  run.id = read_id(child(at, "id"));
  run.label = read_string(child(at, "label"), /*required=*/false, run.id);
  run.study_run = read_string(child(at, "study_run"), /*required=*/false);
  run.overrides = read_overrides(child(at, "set"));
  run.line = line_of(at.node);
  return run;
}

YAML::Node parse_yaml(const std::string& text, const std::string& source) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    const std::string line = e.mark.is_null() ? "" : ":" + std::to_string(e.mark.line + 1);
    throw ConfigError(source + line + ": invalid YAML: " + e.msg);
  }
}

std::string resolve(const std::string& plan_dir, const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  return (fs::path(plan_dir) / path).lexically_normal().string();
}

StudyPlatform read_platform(const Located& at) {
  expect_map(at, {"id", "name", "gpu", "gpu_memory", "software"});
  StudyPlatform platform;
  platform.id = read_id(child(at, "id"));
  platform.name = read_string(child(at, "name"), /*required=*/false, platform.id);
  platform.gpu = read_string(child(at, "gpu"), /*required=*/false);
  platform.gpu_memory = read_string(child(at, "gpu_memory"), /*required=*/false);
  platform.software = read_string(child(at, "software"), /*required=*/false);
  return platform;
}

StudyRun read_study_run(const Located& at, const std::vector<StudyPlatform>& platforms) {
  expect_map(at, {"id", "label", "times"});
  StudyRun run;
  run.id = read_id(child(at, "id"));
  run.label = read_string(child(at, "label"), /*required=*/false, run.id);
  run.times.resize(platforms.size());
  std::vector<std::string> ids;
  for (const auto& p : platforms) ids.push_back(p.id);
  const Located times = child(at, "times");
  expect_map(times, ids);
  for (std::size_t i = 0; i < platforms.size(); ++i) {
    const std::string text = read_string(child(times, ids[i]), /*required=*/false);
    run.times[i] = StudyTime{parse_leading_mm_ss(text), text};
  }
  return run;
}

// Calls `read` on each item of the list at `at` (required, non-empty).
template <typename Read>
void for_each_item(const Located& at, Read read) {
  if (!at.node.IsSequence() || at.node.size() == 0) {
    fail(at, "expected a non-empty list, got " + describe(at.node));
  }
  for (std::size_t i = 0; i < at.node.size(); ++i) {
    read(Located{at.node[i], at.path + "[" + std::to_string(i) + "]", at.source});
  }
}

}  // namespace

const StudyRun* StudyFigures::find(const std::string& id) const {
  for (const auto& run : runs)
    if (run.id == id) return &run;
  return nullptr;
}

ExperimentPlan parse_experiment_plan(const std::string& yaml, const std::string& source,
                                     const std::string& plan_dir) {
  const Located top{parse_yaml(yaml, source), "", &source};
  expect_map(top, {"name", "base", "study", "set", "runs"});
  ExperimentPlan plan;
  plan.source = source;
  plan.name = read_id(child(top, "name"));
  plan.base = resolve(plan_dir, read_string(child(top, "base"), /*required=*/true));
  plan.study.source = resolve(plan_dir, read_string(child(top, "study"), /*required=*/false));
  plan.overrides = read_overrides(child(top, "set"));
  for_each_item(child(top, "runs"), [&](const Located& at) {
    PlanRun run = read_run(at);
    for (const auto& other : plan.runs) {
      if (other.id == run.id) fail(child(at, "id"), "duplicate run id '" + run.id + "'");
    }
    plan.runs.push_back(std::move(run));
  });
  return plan;
}

ExperimentPlan load_experiment_plan(const std::string& path) {
  const std::string dir = fs::path(path).parent_path().string();
  ExperimentPlan plan = parse_experiment_plan(read_input_file(path, "plan file"), path, dir);
  if (!plan.study.source.empty()) {
    plan.study = load_study_figures(plan.study.source);
    check_study_links(plan, plan.study);
  }
  return plan;
}

StudyFigures parse_study_figures(const std::string& yaml, const std::string& source) {
  const Located top{parse_yaml(yaml, source), "", &source};
  expect_map(top, {"title", "task", "time_measured", "accuracy", "train_images", "valid_images",
                   "setup", "platforms", "runs"});
  StudyFigures study;
  study.source = source;
  study.title = read_string(child(top, "title"), /*required=*/true);
  study.task = read_string(child(top, "task"), /*required=*/false);
  study.time_measured = read_string(child(top, "time_measured"), /*required=*/false);
  study.accuracy = read_string(child(top, "accuracy"), /*required=*/false);
  study.train_images = read_count(child(top, "train_images"));
  study.valid_images = read_count(child(top, "valid_images"));
  study.setup = read_overrides(child(top, "setup"));
  for_each_item(child(top, "platforms"),
                [&](const Located& at) { study.platforms.push_back(read_platform(at)); });
  for_each_item(child(top, "runs"), [&](const Located& at) {
    study.runs.push_back(read_study_run(at, study.platforms));
  });
  return study;
}

StudyFigures load_study_figures(const std::string& path) {
  return parse_study_figures(read_input_file(path, "study file"), path);
}

void check_study_links(const ExperimentPlan& plan, const StudyFigures& study) {
  std::vector<std::string> ids;
  for (const auto& run : study.runs) ids.push_back(run.id);
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    const PlanRun& run = plan.runs[i];
    if (run.study_run.empty() || study.find(run.study_run)) continue;
    const std::string suggestion = closest(run.study_run, ids);
    throw ConfigError(plan.source + ":" + std::to_string(run.line) + ": runs[" + std::to_string(i) +
                          "].study_run: '" + run.study_run + "' is not a run of " + study.source +
                          (suggestion.empty() ? "" : "; did you mean '" + suggestion + "'?"),
                      "its runs: " + join(ids));
  }
}

std::optional<double> parse_leading_mm_ss(const std::string& text) {
  std::vector<int> fields;
  std::size_t i = 0;
  while (true) {
    const std::size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == start || i - start > 4) return std::nullopt;
    fields.push_back(std::stoi(text.substr(start, i - start)));
    if (i < text.size() && text[i] == ':' && fields.size() < 3) {
      ++i;
      continue;
    }
    break;
  }
  if (fields.size() < 2 || fields.back() >= 60) return std::nullopt;
  if (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) return std::nullopt;
  double seconds = 0;
  for (const int f : fields) seconds = seconds * 60 + f;
  return seconds;
}

}  // namespace ltfit
