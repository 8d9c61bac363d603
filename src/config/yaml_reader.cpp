// Reading a YAML document users write (yaml_reader.h): loading with duplicate-key checks, nodes
// with their key paths, located errors, map key checks and typed scalar readers.
// Thread-safe: no shared state.
#include "ltfit/config/yaml_reader.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <unordered_map>
#include <utility>

#include "ltfit/util/choices.h"
#include "ltfit/util/error.h"
#include "ltfit/util/utf8.h"

namespace ltfit::yaml {
namespace {

std::string child_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

// A map key as text for messages and comparisons: its scalar, or how it was written.
std::string key_text(const YAML::Node& key) {
  return key.IsScalar() ? key.Scalar() : describe(key);
}

// The --set that supplied `path`: the last one whose key is `path` or a parent of it.
const Override* override_for(const Context& context, const std::string& path) {
  for (auto it = context.overrides.rbegin(); it != context.overrides.rend(); ++it) {
    if (path == it->key || path.rfind(it->key + ".", 0) == 0) return &*it;
  }
  return nullptr;
}

}  // namespace

// ---- loading ---------------------------------------------------------------------------------

YAML::Node load_document(const std::string& text, const Context& context) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    const std::string line = e.mark.is_null() ? ""
                                              : ":" + std::to_string(e.mark.line + 1) + ":" +
                                                    std::to_string(e.mark.column + 1);
    throw ConfigError(context.source + line + ": invalid YAML: " + e.msg,
                      "check the indentation, colons and brackets there");
  }
  check_unique_keys(context, Located{root, ""});
  return root;
}

namespace {

// Containers already walked, by text position. An alias (*a) is the very node its anchor (&a)
// names, so without this a document of aliases to aliases would be walked exponentially often.
using Walked = std::unordered_multimap<int, YAML::Node>;

bool first_visit(const YAML::Node& node, Walked& walked) {
  const int pos = node.Mark().pos;
  const auto [begin, end] = walked.equal_range(pos);
  for (auto it = begin; it != end; ++it) {
    if (it->second.is(node)) return false;
  }
  walked.emplace(pos, node);
  return true;
}

// yaml-cpp keeps every entry of a map, duplicates included, in its iteration (a look-up finds
// only the first), so walking the entries sees what the text said.
void check_unique_keys(const Context& context, const Located& at, Walked& walked) {
  if (!at.node.IsDefined() || !(at.node.IsMap() || at.node.IsSequence())) return;
  if (!first_visit(at.node, walked)) return;
  if (at.node.IsSequence()) {
    for (std::size_t i = 0; i < at.node.size(); ++i)
      check_unique_keys(context, item(at, i), walked);
    return;
  }
  std::vector<std::string> seen;
  for (const auto& entry : at.node) {
    const std::string key = key_text(entry.first);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      fail_at(context, entry.first, child_path(at.path, key), "duplicate key");
    }
    seen.push_back(key);
    check_unique_keys(context, Located{entry.second, child_path(at.path, key)}, walked);
  }
}

}  // namespace

void check_unique_keys(const Context& context, const Located& at) {
  Walked walked;
  check_unique_keys(context, at, walked);
}

// ---- text ------------------------------------------------------------------------------------

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

// ---- the tree and located errors -------------------------------------------------------------

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

ConfigError error_at(const Context& context, const YAML::Node& node, const std::string& path,
                     const std::string& what, const std::string& hint) {
  std::string where = context.source;
  std::string suffix;
  if (const Override* from = override_for(context, path)) {
    suffix = " (from --set " + from->key + "=" + from->value + ")";
  } else if (node.IsDefined() && !node.Mark().is_null()) {
    where += ":" + std::to_string(node.Mark().line + 1);
  }
  return ConfigError(where + ": " + (path.empty() ? "" : path + ": ") + what + suffix, hint);
}

void fail_at(const Context& context, const YAML::Node& node, const std::string& path,
             const std::string& what, const std::string& hint) {
  throw error_at(context, node, path, what, hint);
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

Located item(const Located& parent, std::size_t index) {
  Located result{YAML::Node(YAML::NodeType::Undefined),
                 parent.path + "[" + std::to_string(index) + "]"};
  if (parent.node.IsDefined() && parent.node.IsSequence() && index < parent.node.size()) {
    result.node.reset(parent.node[index]);
  }
  return result;
}

namespace {

ConfigError unknown_key_error(const Context& context, const YAML::Node& key_node,
                              const Located& map, const std::string& key,
                              const std::vector<std::string>& keys) {
  const std::string suggestion = closest(key, keys);
  const std::string under = map.path.empty() ? "at the top level" : "under '" + map.path + "'";
  const std::string valid = "valid keys " + under + ": " + join(keys);
  return error_at(context, key_node, child_path(map.path, key),
                  suggestion.empty() ? "unknown key (" + valid + ")"
                                     : "unknown key; did you mean '" + suggestion + "'?",
                  valid);
}

}  // namespace

void check_map_keys(const Context& context, const Located& at, const std::vector<std::string>& keys,
                    const std::function<void(const ConfigError&)>& report) {
  if (!at.node.IsDefined() || at.node.IsNull()) return;
  if (!at.node.IsMap()) fail_type(context, at, "a map with keys " + join(keys));
  for (const auto& entry : at.node) {
    const std::string key = key_text(entry.first);
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      report(unknown_key_error(context, entry.first, at, key, keys));
    }
  }
}

void expect_map(const Context& context, const Located& at, const std::vector<std::string>& keys) {
  check_map_keys(context, at, keys, [](const ConfigError& e) { throw e; });
}

// ---- typed readers (type checks; ranges are the caller's rules) -------------------------------

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

// True when `value`, written as config_writer.cpp writes it (a map value, emit_string), reads
// back as the same bytes.
bool survives_yaml_round_trip(const std::string& value) {
  try {
    YAML::Emitter out;
    out << YAML::BeginMap << YAML::Key << "k" << YAML::Value;
    emit_string(out, value);
    out << YAML::EndMap;
    return YAML::Load(out.c_str())["k"].as<std::string>() == value;
  } catch (const YAML::Exception&) {
    return false;
  }
}

}  // namespace

void emit_string(YAML::Emitter& out, const std::string& value) {
  const bool null_like =
      value.empty() || value == "~" || value == "null" || value == "Null" || value == "NULL";
  const auto is_blank = [](char c) { return c == ' ' || c == '\t'; };
  const bool edge_blank = !value.empty() && (is_blank(value.front()) || is_blank(value.back()));
  const bool control = std::any_of(value.begin(), value.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
  if (null_like || edge_blank || control) out << YAML::DoubleQuoted;
  out << value;
}

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
  for (const auto& entry : at.node) {
    const auto value = is_plain_scalar(entry) ? parse_real(entry.Scalar()) : std::nullopt;
    if (!value) fail_type(context, at, "a list of numbers");
    values.push_back(*value);
  }
  out = std::move(values);
}

}  // namespace ltfit::yaml
