// Reading experiment plans and study files (experiment_plan.h).
//
// Like config_loader.cpp, the only readers of these YAML trees, and through the same helper
// (config/yaml_reader.h): each file is checked for its shape (maps, required keys, unknown keys
// with a "did you mean", duplicate keys) and every error names the file, the 1-based line and the
// key path. Thread-safe: no shared state.
#include "ltfit/study/experiment_plan.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>

#include "ltfit/config/yaml_reader.h"
#include "ltfit/util/choices.h"
#include "ltfit/util/error.h"
#include "ltfit/util/input_file.h"

namespace ltfit {
namespace {

namespace fs = std::filesystem;
using yaml::child;
using yaml::Context;
using yaml::describe;
using yaml::fail_at;
using yaml::fail_type;
using yaml::Located;

int line_of(const YAML::Node& node) {
  return node.IsDefined() && !node.Mark().is_null() ? node.Mark().line + 1 : 0;
}

// `at` must be a map (present, not null) whose keys are all in `keys`.
void expect_required_map(const Context& context, const Located& at,
                         const std::vector<std::string>& keys) {
  if (!at.node.IsMap()) fail_type(context, at, "a map with keys " + join(keys));
  yaml::expect_map(context, at, keys);
}

std::string read_string(const Context& context, const Located& at, bool required,
                        const std::string& fallback = "") {
  if (!at.node.IsDefined() || at.node.IsNull()) {
    if (required) fail_at(context, at.node, at.path, "is required");
    return fallback;
  }
  std::string value;
  yaml::read_value(context, at, value);
  return value;
}

std::int64_t read_count(const Context& context, const Located& at) {
  if (!at.node.IsDefined() || at.node.IsNull()) fail_at(context, at.node, at.path, "is required");
  std::uint64_t count = 0;
  yaml::read_value(context, at, count);
  if (count > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    fail_type(context, at, "a non-negative integer");
  }
  return static_cast<std::int64_t>(count);
}

// [A-Za-z0-9._-]+, not "." or "..": safe as a directory name and in CSV.
std::string read_id(const Context& context, const Located& at) {
  const std::string id = read_string(context, at, /*required=*/true);
  const bool safe = std::all_of(id.begin(), id.end(), [](unsigned char c) {
    return std::isalnum(c) != 0 || c == '.' || c == '_' || c == '-';
  });
  if (!safe || id.empty() || id == "." || id == "..") {
    fail_at(context, at.node, at.path,
            "expected an id of letters, digits, '.', '_' and '-', got '" + id + "'");
  }
  return id;
}

// A `set:` value as `--set` text: scalars as written (quoted ones re-quoted), lists in flow style.
std::string override_text(const Context& context, const Located& at) {
  const YAML::Node& node = at.node;
  if (node.IsNull()) return "null";
  if (node.IsScalar()) {
    if (node.Tag() != "!") return node.Scalar();
    std::string quoted = "'";
    for (const char c : node.Scalar()) quoted += c == '\'' ? std::string("''") : std::string(1, c);
    return quoted + "'";
  }
  const bool flat_list = node.IsSequence() && std::all_of(node.begin(), node.end(), [](auto entry) {
                           return entry.IsScalar();
                         });
  if (!flat_list) {
    fail_at(context, node, at.path, "expected a value or a list of values, got " + describe(node),
            "write nested keys dotted: data.augment.flip: false");
  }
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

// A `set:` map of dotted keys to values; absent or null: none. (Its keys are unique: the
// document was loaded by yaml::load_document.)
std::vector<Override> read_overrides(const Context& context, const Located& at) {
  std::vector<Override> overrides;
  if (!at.node.IsDefined() || at.node.IsNull()) return overrides;
  if (!at.node.IsMap()) {
    fail_type(context, at, "a map of config keys to values (data.batch_size: 64)");
  }
  for (const auto& entry : at.node) {
    const std::string key = entry.first.Scalar();
    const Located value{entry.second, at.path + "." + key};
    const bool dotted = key.find('.') != std::string::npos && key.front() != '.' &&
                        key.back() != '.' && key.find("..") == std::string::npos;
    if (!dotted) {
      fail_at(context, entry.first, value.path,
              "expected a dotted config key like data.batch_size");
    }
    overrides.push_back(Override{key, override_text(context, value)});
  }
  return overrides;
}

// `gpus:`: a whole number of GPUs from 1 to kMaxGpus, or `all`; absent or null: not given.
constexpr long long kMaxGpus = 1024;

RunGpus read_gpus(const Context& context, const Located& at) {
  RunGpus gpus;
  if (!at.node.IsDefined() || at.node.IsNull()) return gpus;
  const bool plain = at.node.IsScalar() && yaml::is_plain_scalar(at.node);
  const auto count = plain ? yaml::parse_integer(at.node.Scalar()) : std::nullopt;
  gpus.given = true;
  if (plain && at.node.Scalar() == "all") {
    gpus.all = true;
  } else if (count && *count >= 1 && *count <= kMaxGpus) {
    gpus.count = static_cast<int>(*count);
  } else {
    fail_type(context, at, "a number of GPUs from 1 to " + std::to_string(kMaxGpus) + " or all");
  }
  return gpus;
}

// `kill_at_epoch:` a number of epochs >= 1 (a whole number: at that epoch's end; 25.5: halfway
// through the 26th), on a single-process run; absent or null: not given.
std::optional<double> read_kill_at_epoch(const Context& context, const Located& at,
                                         const RunGpus& gpus) {
  if (!at.node.IsDefined() || at.node.IsNull()) return std::nullopt;
  double epochs = 0.0;
  yaml::read_value(context, at, epochs);
  if (!(epochs >= 1.0) || !std::isfinite(epochs)) {
    fail_type(context, at, "a number of epochs >= 1 (25.5: halfway through the 26th epoch)");
  }
  if (gpus.all || gpus.count >= 2) {
    fail_at(context, at.node, at.path,
            "is for a single-process run, not one with gpus: " + gpus.text(),
            "cut a one-GPU (or CPU) run; a torchrun run's ranks would need killing one by one");
  }
  return epochs;
}

PlanRun read_run(const Context& context, const Located& at) {
  expect_required_map(context, at, {"id", "label", "study_run", "set", "gpus", "kill_at_epoch"});
  PlanRun run;
  run.id = read_id(context, child(at, "id"));
  run.label = read_string(context, child(at, "label"), /*required=*/false, run.id);
  run.study_run = read_string(context, child(at, "study_run"), /*required=*/false);
  run.overrides = read_overrides(context, child(at, "set"));
  run.gpus = read_gpus(context, child(at, "gpus"));
  run.kill_at_epoch = read_kill_at_epoch(context, child(at, "kill_at_epoch"), run.gpus);
  run.line = line_of(at.node);
  return run;
}

std::string resolve(const std::string& plan_dir, const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  return (fs::path(plan_dir) / path).lexically_normal().string();
}

StudyPlatform read_platform(const Context& context, const Located& at) {
  expect_required_map(context, at, {"id", "name", "gpu", "gpu_memory", "software"});
  StudyPlatform platform;
  platform.id = read_id(context, child(at, "id"));
  platform.name = read_string(context, child(at, "name"), /*required=*/false, platform.id);
  platform.gpu = read_string(context, child(at, "gpu"), /*required=*/false);
  platform.gpu_memory = read_string(context, child(at, "gpu_memory"), /*required=*/false);
  platform.software = read_string(context, child(at, "software"), /*required=*/false);
  return platform;
}

StudyRun read_study_run(const Context& context, const Located& at,
                        const std::vector<StudyPlatform>& platforms) {
  expect_required_map(context, at, {"id", "label", "times"});
  StudyRun run;
  run.id = read_id(context, child(at, "id"));
  run.label = read_string(context, child(at, "label"), /*required=*/false, run.id);
  run.times.resize(platforms.size());
  std::vector<std::string> ids;
  for (const auto& p : platforms) ids.push_back(p.id);
  const Located times = child(at, "times");
  expect_required_map(context, times, ids);
  for (std::size_t i = 0; i < platforms.size(); ++i) {
    const std::string text = read_string(context, child(times, ids[i]), /*required=*/false);
    run.times[i] = StudyTime{parse_leading_mm_ss(text), text};
  }
  return run;
}

StudyScaling read_scaling(const Context& context, const Located& at) {
  expect_required_map(context, at, {"platform", "gpus", "speedup", "source", "note"});
  StudyScaling scaling;
  scaling.platform = read_string(context, child(at, "platform"), /*required=*/true);
  const Located gpus = child(at, "gpus");
  if (!gpus.node.IsDefined()) fail_at(context, at.node, gpus.path, "is required");
  yaml::read_value(context, gpus, scaling.gpus);
  if (scaling.gpus < 2 || scaling.gpus > kMaxGpus) {
    fail_type(context, gpus, "a number of GPUs from 2 to " + std::to_string(kMaxGpus));
  }
  const Located speedup = child(at, "speedup");
  if (!speedup.node.IsDefined()) fail_at(context, at.node, speedup.path, "is required");
  yaml::read_value(context, speedup, scaling.speedup);
  if (!(scaling.speedup > 0.0)) fail_type(context, speedup, "a positive speed-up (1.8)");
  scaling.source = read_string(context, child(at, "source"), /*required=*/true);
  scaling.note = read_string(context, child(at, "note"), /*required=*/false);
  return scaling;
}

// Calls `read` on each item of the list at `at` (required, non-empty).
template <typename Read>
void for_each_item(const Context& context, const Located& at, Read read) {
  if (!at.node.IsSequence() || at.node.size() == 0) fail_type(context, at, "a non-empty list");
  for (std::size_t i = 0; i < at.node.size(); ++i) read(yaml::item(at, i));
}

}  // namespace

const StudyRun* StudyFigures::find(const std::string& id) const {
  for (const auto& run : runs)
    if (run.id == id) return &run;
  return nullptr;
}

ExperimentPlan parse_experiment_plan(const std::string& yaml, const std::string& source,
                                     const std::string& plan_dir) {
  const Context context{source, {}};
  const Located top{yaml::load_document(yaml, context), ""};
  expect_required_map(context, top, {"name", "base", "study", "set", "runs"});
  ExperimentPlan plan;
  plan.source = source;
  plan.name = read_id(context, child(top, "name"));
  plan.base = resolve(plan_dir, read_string(context, child(top, "base"), /*required=*/true));
  plan.study.source =
      resolve(plan_dir, read_string(context, child(top, "study"), /*required=*/false));
  plan.overrides = read_overrides(context, child(top, "set"));
  for_each_item(context, child(top, "runs"), [&](const Located& at) {
    PlanRun run = read_run(context, at);
    for (const auto& other : plan.runs) {
      if (other.id != run.id) continue;
      const Located id = child(at, "id");
      fail_at(context, id.node, id.path, "duplicate run id '" + run.id + "'");
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
  const Context context{source, {}};
  const Located top{yaml::load_document(yaml, context), ""};
  expect_required_map(context, top,
                      {"title", "task", "time_measured", "accuracy", "train_images", "valid_images",
                       "setup", "platforms", "runs", "scaling"});
  StudyFigures study;
  study.source = source;
  study.title = read_string(context, child(top, "title"), /*required=*/true);
  study.task = read_string(context, child(top, "task"), /*required=*/false);
  study.time_measured = read_string(context, child(top, "time_measured"), /*required=*/false);
  study.accuracy = read_string(context, child(top, "accuracy"), /*required=*/false);
  study.train_images = read_count(context, child(top, "train_images"));
  study.valid_images = read_count(context, child(top, "valid_images"));
  study.setup = read_overrides(context, child(top, "setup"));
  for_each_item(context, child(top, "platforms"),
                [&](const Located& at) { study.platforms.push_back(read_platform(context, at)); });
  for_each_item(context, child(top, "runs"), [&](const Located& at) {
    study.runs.push_back(read_study_run(context, at, study.platforms));
  });
  const Located scaling = child(top, "scaling");
  if (scaling.node.IsDefined() && !scaling.node.IsNull()) {
    for_each_item(context, scaling,
                  [&](const Located& at) { study.scaling.push_back(read_scaling(context, at)); });
  }
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
