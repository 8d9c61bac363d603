// Loading and overriding the YAML configuration (config_loader.h).
//
// Pipeline: text -> YAML tree -> `--set` overrides spliced into the tree -> structs (the
// convert_* functions, the only code that reads the tree) -> range and enumeration rules
// (config_rules.cpp, written once against the structs). Errors name the file, the line of the
// offending node (yaml-cpp marks are 0-based; messages are 1-based) or the `--set` that
// supplied it. Writing (to_yaml) is in config_writer.cpp; only these src/config files include
// yaml-cpp. Thread-safe: no shared state.
#include "ltfit/config/config_loader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <optional>
#include <sstream>
#include <utility>

#include "config/config_internal.h"
#include "ltfit/util/error.h"
#include "ltfit/util/utf8.h"
#include "ltfit/util/input_file.h"

namespace ltfit {
namespace {

using config_internal::closest;
using config_internal::join;

const char* const kDurationExpected =
    "a duration like 5h50m, 90m, 45s, a number of seconds, or null";

// Where values come from: the file (or "<defaults>") and the --set overrides, for messages.
struct Context {
  std::string source;
  std::vector<Override> overrides;
};

// A node of the tree and its dotted key path ("data.batch_size"); "" is the root.
struct Located {
  YAML::Node node;
  std::string path;
};

// ---- text helpers -------------------------------------------------------------------------

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, separator)) parts.push_back(part);
  if (!text.empty() && text.back() == separator) parts.emplace_back();
  return parts;
}

std::optional<long long> parse_integer(const std::string& text) {
  const char* begin = text.data() + (!text.empty() && text[0] == '+');
  const char* end = text.data() + text.size();
  long long value = 0;
  const auto result = std::from_chars(begin, end, value);
  if (begin == end || result.ec != std::errc() || result.ptr != end) return std::nullopt;
  return value;
}

// A finite number ("3", "0.5", "1e-5", "+2"); nullopt for anything else, "inf" and "nan".
std::optional<double> parse_real(const std::string& text) {
  const char* begin = text.data() + (!text.empty() && text[0] == '+');
  const char* end = text.data() + text.size();
  double value = 0;
  const auto result = std::from_chars(begin, end, value);
  if (begin == end || result.ec != std::errc() || result.ptr != end) return std::nullopt;
  if (!std::isfinite(value)) return std::nullopt;
  return value;
}

// "5h50m", "90m", "45s", "1.5h" (units in h, m, s order, each at most once) or plain seconds.
std::optional<double> duration_seconds(const std::string& text) {
  if (text.empty()) return std::nullopt;
  if (auto plain = parse_real(text)) return plain;
  const std::string units = "hms";
  const double unit_seconds[] = {3600.0, 60.0, 1.0};
  double total = 0;
  std::size_t position = 0;
  std::size_t next_unit = 0;
  while (position < text.size()) {
    const std::size_t end = text.find_first_of(units, position);
    if (end == std::string::npos || end == position) return std::nullopt;
    const auto number = parse_real(text.substr(position, end - position));
    const std::size_t unit = units.find(text[end]);
    if (!number || *number < 0 || unit < next_unit) return std::nullopt;
    total += *number * unit_seconds[unit];
    next_unit = unit + 1;
    position = end + 1;
  }
  return total;
}

// ---- tree helpers and located errors -------------------------------------------------------

bool is_plain_scalar(const YAML::Node& node) {
  return node.IsDefined() && node.IsScalar() && node.Tag() != "!";  // "!": quoted in the text
}

// The value as a user wrote it, for "got ..." ("-4", "'16'" when quoted, "a list [1, 2]").
std::string describe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "null";
  if (node.IsScalar()) return node.Tag() == "!" ? "'" + node.Scalar() + "'" : node.Scalar();
  YAML::Emitter out;
  out << YAML::Flow << node;
  std::string text = out.c_str();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return (node.IsMap() ? "a map " : "a list ") + text;
}

// The --set that supplied `path`: the last one whose key is `path` or a parent of it.
const Override* override_for(const Context& context, const std::string& path) {
  for (auto it = context.overrides.rbegin(); it != context.overrides.rend(); ++it) {
    if (path == it->key || path.rfind(it->key + ".", 0) == 0) return &*it;
  }
  return nullptr;
}

// Throws "<file>:<line>: <path>: <what>", or "<file>: <path>: <what> (from --set k=v)".
[[noreturn]] void fail_at(const Context& context, const YAML::Node& node, const std::string& path,
                          const std::string& what, const std::string& hint = "") {
  std::string where = context.source;
  std::string suffix;
  if (const Override* from = override_for(context, path)) {
    suffix = " (from --set " + from->key + "=" + from->value + ")";
  } else if (node.IsDefined() && !node.Mark().is_null()) {
    where += ":" + std::to_string(node.Mark().line + 1);
  }
  throw ConfigError(where + ": " + (path.empty() ? "" : path + ": ") + what + suffix, hint);
}

[[noreturn]] void fail_type(const Context& context, const Located& at,
                            const std::string& expected) {
  fail_at(context, at.node, at.path, "expected " + expected + ", got " + describe(at.node));
}

std::string child_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

// The child `key` of a map node; an undefined node when absent (or the parent is no map).
Located child(const Located& parent, const std::string& key) {
  Located result{YAML::Node(YAML::NodeType::Undefined), child_path(parent.path, key)};
  if (!parent.node.IsDefined() || !parent.node.IsMap()) return result;
  const YAML::Node& map = parent.node;  // const lookup: never inserts
  const YAML::Node value = map[key];
  if (value.IsDefined()) result.node.reset(value);
  return result;
}

// The node at a dotted path, or an undefined node. Walks with reset(): Node's operator=
// would overwrite the node it refers to, not rebind the handle.
YAML::Node find_node(const YAML::Node& root, const std::string& path) {
  YAML::Node node(YAML::NodeType::Undefined);
  node.reset(root);
  for (const auto& key : split(path, '.')) node.reset(child(Located{node, ""}, key).node);
  return node;
}

[[noreturn]] void fail_unknown_key(const Context& context, const YAML::Node& key_node,
                                   const Located& map, const std::string& key,
                                   const std::vector<std::string>& keys) {
  const std::string suggestion = closest(key, keys);
  const std::string under = map.path.empty() ? "at the top level" : "under '" + map.path + "'";
  const std::string valid = "valid keys " + under + ": " + join(keys);
  fail_at(context, key_node, child_path(map.path, key),
          suggestion.empty() ? "unknown key (" + valid + ")"
                             : "unknown key; did you mean '" + suggestion + "'?",
          valid);
}

// Checks that `at` is absent, null (all defaults) or a map whose keys are all in `keys`.
void expect_map(const Context& context, const Located& at, const std::vector<std::string>& keys) {
  if (!at.node.IsDefined() || at.node.IsNull()) return;
  if (!at.node.IsMap()) fail_type(context, at, "a map with keys " + join(keys));
  std::vector<std::string> seen;
  for (const auto& entry : at.node) {
    const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : describe(entry.first);
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      fail_unknown_key(context, entry.first, at, key, keys);
    }
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      fail_at(context, entry.first, child_path(at.path, key), "duplicate key");
    }
    seen.push_back(key);
  }
}

// ---- scalar readers (type checks; ranges are validate_*'s job) ------------------------------

void read_value(const Context& context, const Located& at, int& out) {
  const auto value = is_plain_scalar(at.node) ? parse_integer(at.node.Scalar()) : std::nullopt;
  if (!value || *value < INT_MIN || *value > INT_MAX) fail_type(context, at, "an integer");
  out = static_cast<int>(*value);
}

void read_value(const Context& context, const Located& at, std::uint64_t& out) {
  const std::string text = is_plain_scalar(at.node) ? at.node.Scalar() : "";
  const char* end = text.data() + text.size();
  const auto result = std::from_chars(text.data(), end, out);
  if (text.empty() || result.ec != std::errc() || result.ptr != end) {
    fail_type(context, at, "a non-negative integer");
  }
}

void read_value(const Context& context, const Located& at, double& out) {
  const auto value = is_plain_scalar(at.node) ? parse_real(at.node.Scalar()) : std::nullopt;
  if (!value) fail_type(context, at, "a number");
  out = *value;
}

// Only YAML 1.2 booleans: yes/no/on/off are rejected rather than guessed.
void read_value(const Context& context, const Located& at, bool& out) {
  const std::string text = is_plain_scalar(at.node) ? at.node.Scalar() : "";
  if (text == "true" || text == "True" || text == "TRUE") {
    out = true;
  } else if (text == "false" || text == "False" || text == "FALSE") {
    out = false;
  } else {
    fail_type(context, at, "true or false");
  }
}

void read_value(const Context& context, const Located& at, std::string& out) {
  if (!at.node.IsScalar()) fail_type(context, at, "a string");
  // YAML is Unicode: a string of other bytes could not be written back as it was read (the
  // emitter would replace them), so a run directory's config.yaml would name another path.
  if (!is_valid_utf8(at.node.Scalar())) {
    fail_type(context, at, "a string of valid UTF-8 text (save the file as UTF-8)");
  }
  out = at.node.Scalar();
}

void read_value(const Context& context, const Located& at, std::vector<double>& out) {
  if (!at.node.IsSequence()) fail_type(context, at, "a list of numbers");
  std::vector<double> values;
  for (const auto& item : at.node) {
    const auto value = is_plain_scalar(item) ? parse_real(item.Scalar()) : std::nullopt;
    if (!value) fail_type(context, at, "a list of numbers");
    values.push_back(*value);
  }
  out = std::move(values);
}

// `train.time_limit`: null (no limit), a duration string or a number of seconds.
void read_value(const Context& context, const Located& at, std::optional<double>& out) {
  if (at.node.IsNull()) {
    out.reset();
    return;
  }
  const auto seconds = at.node.IsScalar() ? duration_seconds(at.node.Scalar()) : std::nullopt;
  if (!seconds) fail_type(context, at, kDurationExpected);
  out = seconds;
}

// Reads `at` into `out` when the key is present; absent keys keep the struct's default.
template <typename T>
void read(const Context& context, const Located& at, T& out) {
  if (at.node.IsDefined()) read_value(context, at, out);
}

// `data.workers`: `auto` (stored as 0) or an integer.
void read_workers(const Context& context, const Located& at, int& out) {
  if (is_plain_scalar(at.node) && at.node.Scalar() == "auto") {
    out = 0;
  } else if (at.node.IsDefined()) {
    const auto value = is_plain_scalar(at.node) ? parse_integer(at.node.Scalar()) : std::nullopt;
    if (!value || *value < INT_MIN || *value > INT_MAX) {
      fail_type(context, at, "auto or an integer from 1 to " + std::to_string(kMaxLoaderWorkers));
    }
    out = static_cast<int>(*value);
  }
}

// `data.max_pixels`: a pixel count, or null (stored as 0) for no limit.
void read_max_pixels(const Context& context, const Located& at, std::uint64_t& out) {
  if (at.node.IsDefined() && at.node.IsNull()) {
    out = 0;
  } else if (at.node.IsDefined()) {
    const std::string text = is_plain_scalar(at.node) ? at.node.Scalar() : "";
    const char* end = text.data() + text.size();
    const auto result = std::from_chars(text.data(), end, out);
    if (text.empty() || result.ec != std::errc() || result.ptr != end) {
      fail_type(context, at, "a number of pixels (an integer >= 0), or null for no limit");
    }
  }
}

// `data.formats`: a list of format names (checked against kImageFormatNames by the rules).
void read_formats(const Context& context, const Located& at, std::vector<std::string>& out) {
  if (!at.node.IsDefined()) return;
  const std::string expected = "a list of image formats, e.g. [jpeg, png]";
  if (!at.node.IsSequence()) fail_type(context, at, expected);
  std::vector<std::string> names;
  for (const auto& item : at.node) {
    if (!is_plain_scalar(item)) fail_type(context, at, expected);
    names.push_back(item.Scalar());
  }
  out = std::move(names);
}

// `train.lr`: one number, or a list [low, high].
void read_lr(const Context& context, const Located& at, std::vector<double>& out) {
  if (!at.node.IsDefined()) return;
  if (at.node.IsSequence()) return read_value(context, at, out);
  const auto value = is_plain_scalar(at.node) ? parse_real(at.node.Scalar()) : std::nullopt;
  if (!value) fail_type(context, at, "a number or a list [low, high]");
  out = {*value};
}

// ---- tree -> structs: the one place that reads the tree --------------------------------------

void convert_run(const Context& context, const Located& at, RunConfig& run) {
  expect_map(context, at, {"name", "out_dir", "seed", "deterministic"});
  read(context, child(at, "name"), run.name);
  read(context, child(at, "out_dir"), run.out_dir);
  read(context, child(at, "seed"), run.seed);
  read(context, child(at, "deterministic"), run.deterministic);
}

void convert_augment(const Context& context, const Located& at, AugmentConfig& augment) {
  expect_map(
      context, at,
      {"flip", "max_rotate", "max_zoom", "max_lighting", "max_warp", "p_affine", "p_lighting"});
  read(context, child(at, "flip"), augment.flip);
  read(context, child(at, "max_rotate"), augment.max_rotate);
  read(context, child(at, "max_zoom"), augment.max_zoom);
  read(context, child(at, "max_lighting"), augment.max_lighting);
  read(context, child(at, "max_warp"), augment.max_warp);
  read(context, child(at, "p_affine"), augment.p_affine);
  read(context, child(at, "p_lighting"), augment.p_lighting);
}

void convert_data(const Context& context, const Located& at, DataConfig& data) {
  expect_map(context, at,
             {"root", "layout", "valid_count", "image_size", "batch_size", "workers", "augment",
              "subset", "max_pixels", "formats"});
  read(context, child(at, "root"), data.root);
  read(context, child(at, "layout"), data.layout);
  read(context, child(at, "valid_count"), data.valid_count);
  read(context, child(at, "subset"), data.subset);
  read(context, child(at, "image_size"), data.image_size);
  read(context, child(at, "batch_size"), data.batch_size);
  read_workers(context, child(at, "workers"), data.workers);
  convert_augment(context, child(at, "augment"), data.augment);
  read_max_pixels(context, child(at, "max_pixels"), data.max_pixels);
  read_formats(context, child(at, "formats"), data.formats);
}

void convert_model(const Context& context, const Located& at, ModelConfig& model) {
  expect_map(context, at, {"arch", "pretrained", "head", "dropout"});
  read(context, child(at, "arch"), model.arch);
  read(context, child(at, "pretrained"), model.pretrained);
  read(context, child(at, "head"), model.head);
  read(context, child(at, "dropout"), model.dropout);
}

void convert_optimizer(const Context& context, const Located& at, OptimizerConfig& optimizer) {
  expect_map(context, at, {"name", "betas", "eps", "weight_decay", "wd_bn_bias"});
  read(context, child(at, "name"), optimizer.name);
  read(context, child(at, "betas"), optimizer.betas);
  read(context, child(at, "eps"), optimizer.eps);
  read(context, child(at, "weight_decay"), optimizer.weight_decay);
  read(context, child(at, "wd_bn_bias"), optimizer.wd_bn_bias);
}

void convert_one_cycle(const Context& context, const Located& at, OneCycleConfig& one_cycle) {
  expect_map(context, at, {"pct_start", "div", "div_final", "moms"});
  read(context, child(at, "pct_start"), one_cycle.pct_start);
  read(context, child(at, "div"), one_cycle.div);
  read(context, child(at, "div_final"), one_cycle.div_final);
  read(context, child(at, "moms"), one_cycle.moms);
}

void convert_checkpoint(const Context& context, const Located& at, CheckpointConfig& checkpoint) {
  expect_map(context, at, {"every_minutes", "keep"});
  read(context, child(at, "every_minutes"), checkpoint.every_minutes);
  read(context, child(at, "keep"), checkpoint.keep);
}

void convert_train(const Context& context, const Located& at, TrainConfig& train) {
  expect_map(context, at,
             {"recipe", "epochs", "freeze_epochs", "frozen", "lr", "optimizer", "one_cycle",
              "precision", "channels_last", "accumulate", "clip_grad_norm", "device", "checkpoint",
              "time_limit", "profile"});
  read(context, child(at, "recipe"), train.recipe);
  read(context, child(at, "epochs"), train.epochs);
  read(context, child(at, "freeze_epochs"), train.freeze_epochs);
  read(context, child(at, "frozen"), train.frozen);
  read_lr(context, child(at, "lr"), train.lr);
  convert_optimizer(context, child(at, "optimizer"), train.optimizer);
  convert_one_cycle(context, child(at, "one_cycle"), train.one_cycle);
  read(context, child(at, "precision"), train.precision);
  read(context, child(at, "channels_last"), train.channels_last);
  read(context, child(at, "accumulate"), train.accumulate);
  read(context, child(at, "clip_grad_norm"), train.clip_grad_norm);
  read(context, child(at, "device"), train.device);
  convert_checkpoint(context, child(at, "checkpoint"), train.checkpoint);
  read(context, child(at, "time_limit"), train.time_limit_seconds);
  read(context, child(at, "profile"), train.profile);
}

void convert_eval(const Context& context, const Located& at, EvalConfig& eval) {
  expect_map(context, at, {"tta", "tta_mode", "tta_beta", "tta_scale", "tta_n"});
  read(context, child(at, "tta"), eval.tta);
  read(context, child(at, "tta_mode"), eval.tta_mode);
  // fastai v2 blends with lerp weight 0.25, v1 with beta 0.4: an unset beta follows the mode.
  if (eval.tta_mode == "v2") eval.tta_beta = 0.25;
  read(context, child(at, "tta_beta"), eval.tta_beta);
  read(context, child(at, "tta_scale"), eval.tta_scale);
  read(context, child(at, "tta_n"), eval.tta_n);
}

Config convert(const Context& context, const YAML::Node& root) {
  const Located top{root, ""};
  expect_map(context, top, {"run", "data", "model", "train", "eval"});
  Config config;
  config.source = context.source;
  convert_run(context, child(top, "run"), config.run);
  convert_data(context, child(top, "data"), config.data);
  convert_model(context, child(top, "model"), config.model);
  convert_train(context, child(top, "train"), config.train);
  convert_eval(context, child(top, "eval"), config.eval);
  return config;
}

// ---- loading -------------------------------------------------------------------------------

YAML::Node parse_yaml(const std::string& text, const std::string& where) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    const std::string line = e.mark.is_null() ? ""
                                              : ":" + std::to_string(e.mark.line + 1) + ":" +
                                                    std::to_string(e.mark.column + 1);
    throw ConfigError(where + line + ": invalid YAML: " + e.msg,
                      "check the indentation, colons and brackets there");
  }
}

// Writes `value` at keys[i..] under `node`, creating maps for missing or null parents.
void set_path(YAML::Node node, const std::vector<std::string>& keys, std::size_t i,
              const YAML::Node& value, const Context& context) {
  if (i + 1 == keys.size()) {
    node[keys[i]] = value;
    return;
  }
  const YAML::Node existing = std::as_const(node)[keys[i]];
  if (!existing.IsDefined() || existing.IsNull()) {
    node[keys[i]] = YAML::Node(YAML::NodeType::Map);
  } else if (!existing.IsMap()) {
    const std::vector<std::string> parent(keys.begin(), keys.begin() + i + 1);
    fail_at(context, existing, join(parent, "."), "is " + describe(existing) + ", not a map");
  }
  set_path(node[keys[i]], keys, i + 1, value, context);
}

void apply_override(YAML::Node& root, const Override& entry, const Context& context) {
  const std::vector<std::string> keys = split(entry.key, '.');
  if (std::any_of(keys.begin(), keys.end(), [](const auto& k) { return k.empty(); })) {
    throw ConfigError("--set expects a dotted key like data.batch_size, got '" + entry.key + "'");
  }
  YAML::Node value;
  try {
    value = YAML::Load(entry.value);
  } catch (const YAML::Exception& e) {
    throw ConfigError("--set " + entry.key + "=" + entry.value + ": invalid YAML value: " + e.msg,
                      "quote strings and close brackets: --set train.lr=[1e-5,1e-3]");
  }
  set_path(root, keys, 0, value, context);
}

}  // namespace

Override parse_override(const std::string& text) {
  const std::size_t equals = text.find('=');
  const auto is_space = [](unsigned char c) { return std::isspace(c) != 0; };
  std::string key = equals == std::string::npos ? "" : text.substr(0, equals);
  key.erase(std::remove_if(key.begin(), key.end(), is_space), key.end());
  if (key.empty()) {
    throw ConfigError("--set expects key=value, got '" + text + "'",
                      "for example --set data.batch_size=64");
  }
  return Override{key, text.substr(equals + 1)};
}

Config load_config(const std::string& path, const std::vector<Override>& overrides) {
  return load_config_from_string(read_input_file(path, "config file"), path, overrides);
}

Config load_config_from_string(const std::string& yaml, const std::string& source,
                               const std::vector<Override>& overrides) {
  const Context context{source, overrides};
  YAML::Node root = parse_yaml(yaml, source);
  if (!root.IsNull() && !root.IsMap()) {
    fail_type(context, Located{root, ""}, "a map with keys run, data, model, train, eval");
  }
  for (const auto& entry : overrides) apply_override(root, entry, context);
  Config config = convert(context, root);
  config_internal::validate_with(config, [&](const config_internal::Problem& problem) {
    const YAML::Node node = find_node(root, problem.path);
    const std::string found = node.IsDefined() ? describe(node) : problem.found;
    fail_at(context, node, problem.path, "expected " + problem.expected + ", got " + found,
            problem.hint);
  });
  return config;
}

double parse_duration(const std::string& text, const std::string& key) {
  const auto seconds = duration_seconds(text);
  if (!seconds) {
    throw ConfigError(key + ": expected " + std::string(kDurationExpected) + ", got '" + text +
                      "'");
  }
  return *seconds;
}

}  // namespace ltfit
