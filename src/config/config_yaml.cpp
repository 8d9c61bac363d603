// Reading values out of the config's YAML tree (config_yaml.h): text to numbers and durations,
// nodes with their key paths, errors naming the file and line or the --set, typed readers, and
// read_fields for a map. Thread-safe: no shared state.
#include "config/config_yaml.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <sstream>
#include <utility>

#include "config/config_internal.h"
#include "ltfit/util/error.h"
#include "ltfit/util/utf8.h"

namespace ltfit::config_internal {

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

std::optional<double> parse_real(const std::string& text) {
  const char* begin = text.data() + (!text.empty() && text[0] == '+');
  const char* end = text.data() + text.size();
  double value = 0;
  const auto result = std::from_chars(begin, end, value);
  if (begin == end || result.ec != std::errc() || result.ptr != end) return std::nullopt;
  if (!std::isfinite(value)) return std::nullopt;
  return value;
}

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

std::string describe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "null";
  if (node.IsScalar()) return node.Tag() == "!" ? "'" + node.Scalar() + "'" : node.Scalar();
  YAML::Emitter out;
  out << YAML::Flow << node;
  std::string text = out.c_str();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return (node.IsMap() ? "a map " : "a list ") + text;
}

namespace {

// The --set that supplied `path`: the last one whose key is `path` or a parent of it.
const Override* override_for(const Context& context, const std::string& path) {
  for (auto it = context.overrides.rbegin(); it != context.overrides.rend(); ++it) {
    if (path == it->key || path.rfind(it->key + ".", 0) == 0) return &*it;
  }
  return nullptr;
}

std::string child_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

}  // namespace

void fail_at(const Context& context, const YAML::Node& node, const std::string& path,
             const std::string& what, const std::string& hint) {
  std::string where = context.source;
  std::string suffix;
  if (const Override* from = override_for(context, path)) {
    suffix = " (from --set " + from->key + "=" + from->value + ")";
  } else if (node.IsDefined() && !node.Mark().is_null()) {
    where += ":" + std::to_string(node.Mark().line + 1);
  }
  throw ConfigError(where + ": " + (path.empty() ? "" : path + ": ") + what + suffix, hint);
}

void fail_type(const Context& context, const Located& at, const std::string& expected) {
  fail_at(context, at.node, at.path, "expected " + expected + ", got " + describe(at.node));
}

Located child(const Located& parent, const std::string& key) {
  Located result{YAML::Node(YAML::NodeType::Undefined), child_path(parent.path, key)};
  if (!parent.node.IsDefined() || !parent.node.IsMap()) return result;
  const YAML::Node& map = parent.node;  // const lookup: never inserts
  const YAML::Node value = map[key];
  if (value.IsDefined()) result.node.reset(value);
  return result;
}

// Walks with reset(): Node's operator= would overwrite the node it refers to, not rebind the
// handle.
YAML::Node find_node(const YAML::Node& root, const std::string& path) {
  YAML::Node node(YAML::NodeType::Undefined);
  node.reset(root);
  for (const auto& key : split(path, '.')) node.reset(child(Located{node, ""}, key).node);
  return node;
}

namespace {

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

}  // namespace

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

namespace {

// True when yaml-cpp writes `value` (as a map value, as config_writer.cpp does) into YAML that
// reads back as the same bytes.
bool survives_yaml_round_trip(const std::string& value) {
  try {
    YAML::Emitter out;
    out << YAML::BeginMap << YAML::Key << "k" << YAML::Value << value << YAML::EndMap;
    return YAML::Load(out.c_str())["k"].as<std::string>() == value;
  } catch (const YAML::Exception&) {
    return false;
  }
}

}  // namespace

void read_value(const Context& context, const Located& at, std::string& out) {
  if (!at.node.IsScalar()) fail_type(context, at, "a string");
  // Names on Linux are bytes, so a value that is not UTF-8 is kept as it is, as long as
  // config.yaml (what a run directory keeps and --resume reads) can hold it. YAML cannot quote
  // such bytes: yaml-cpp's emitter replaces them with U+FFFD whenever the value needs quoting.
  if (!is_valid_utf8(at.node.Scalar()) && !survives_yaml_round_trip(at.node.Scalar())) {
    fail_type(context, at,
              "a string that config.yaml can keep: this one has bytes that are not UTF-8 and "
              "characters YAML must quote (rename the folder, or save the file as UTF-8)");
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

void read_value(const Context& context, const Located& at, std::optional<double>& out) {
  if (at.node.IsNull()) {
    out.reset();
    return;
  }
  const auto seconds = at.node.IsScalar() ? duration_seconds(at.node.Scalar()) : std::nullopt;
  if (!seconds) fail_type(context, at, kDurationExpected);
  out = seconds;
}

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

void read_lr(const Context& context, const Located& at, std::vector<double>& out) {
  if (!at.node.IsDefined()) return;
  if (at.node.IsSequence()) return read_value(context, at, out);
  const auto value = is_plain_scalar(at.node) ? parse_real(at.node.Scalar()) : std::nullopt;
  if (!value) fail_type(context, at, "a number or a list [low, high]");
  out = {*value};
}

// ---- maps --------------------------------------------------------------------------------

void read_fields(const Context& context, const Located& at, const std::vector<Field>& fields) {
  std::vector<std::string> keys;
  for (const Field& f : fields) keys.push_back(f.key);
  expect_map(context, at, keys);
  for (const Field& f : fields) f.read(context, child(at, f.key));
}

}  // namespace ltfit::config_internal
