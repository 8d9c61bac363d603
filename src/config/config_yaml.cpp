// Reading the config's values out of its YAML tree (config_yaml.h): durations, dotted paths, the
// config-specific readers and read_fields for a map, on top of yaml_reader.h.
// Thread-safe: no shared state.
#include "config/config_yaml.h"

#include <charconv>
#include <climits>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>

#include "config/config_internal.h"
#include "ltfit/util/home_path.h"

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

// Walks with reset(): Node's operator= would overwrite the node it refers to, not rebind the
// handle.
YAML::Node find_node(const YAML::Node& root, const std::string& path) {
  YAML::Node node(YAML::NodeType::Undefined);
  node.reset(root);
  for (const auto& key : split(path, '.')) node.reset(child(Located{node, ""}, key).node);
  return node;
}

// ---- config-specific readers --------------------------------------------------------------

void read_duration(const Context& context, const Located& at, std::optional<double>& out) {
  if (!at.node.IsDefined()) return;
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

// "4294967296", "4GiB", "512 MiB", "2GB": a count of bytes with an optional binary (KiB..TiB)
// or decimal (KB..TB) unit; nullopt when it is not one or overflows.
static std::optional<std::uint64_t> parse_byte_count(std::string_view text) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr == text.data()) return std::nullopt;
  std::string_view unit(ptr, static_cast<std::size_t>(end - ptr));
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  static const std::pair<std::string_view, std::uint64_t> kUnits[] = {{"", 1},
                                                                      {"B", 1},
                                                                      {"KiB", 1ULL << 10},
                                                                      {"MiB", 1ULL << 20},
                                                                      {"GiB", 1ULL << 30},
                                                                      {"TiB", 1ULL << 40},
                                                                      {"KB", 1000},
                                                                      {"MB", 1000000},
                                                                      {"GB", 1000000000},
                                                                      {"TB", 1000000000000}};
  for (const auto& [name, scale] : kUnits) {
    if (unit != name) continue;
    if (value > UINT64_MAX / scale) return std::nullopt;
    return value * scale;
  }
  return std::nullopt;
}

void read_byte_count(const Context& context, const Located& at, std::uint64_t& out) {
  if (!at.node.IsDefined()) return;
  const std::string text = is_plain_scalar(at.node) ? at.node.Scalar() : "";
  const std::optional<std::uint64_t> bytes = parse_byte_count(text);
  if (!bytes || *bytes == 0) {
    fail_type(context, at, "a positive number of bytes, e.g. 4294967296 or 4GiB");
  }
  out = *bytes;
}

void read_formats(const Context& context, const Located& at, std::vector<std::string>& out) {
  if (!at.node.IsDefined()) return;
  const std::string expected = "a list of image formats, e.g. [jpeg, png]";
  if (!at.node.IsSequence()) fail_type(context, at, expected);
  std::vector<std::string> names;
  for (const auto& entry : at.node) {
    if (!is_plain_scalar(entry)) fail_type(context, at, expected);
    names.push_back(entry.Scalar());
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

void read_minmax(const Context& context, const Located& at, std::vector<double>& out) {
  if (!at.node.IsDefined()) return;
  if (at.node.IsNull()) {
    out.clear();
    return;
  }
  if (!at.node.IsSequence()) fail_type(context, at, "null, or a list [min, max]");
  read_value(context, at, out);
}

void read_erasing_value(const Context& context, const Located& at, RandomErasingConfig& out) {
  if (!at.node.IsDefined()) return;
  const std::string text = is_plain_scalar(at.node) ? at.node.Scalar() : "";
  if (text == "random") {
    out.random_value = true;
    return;
  }
  const auto value = text.empty() ? std::nullopt : parse_real(text);
  if (!value) fail_type(context, at, "random, or a number");
  out.random_value = false;
  out.value = *value;
}

void read_size_schedule(const Context& context, const Located& at, std::vector<SizeStep>& out) {
  if (!at.node.IsDefined()) return;
  const std::string expected = "a list of [epoch, size] pairs, e.g. [[0, 128], [3, 224]]";
  if (at.node.IsNull()) {
    out.clear();
    return;
  }
  if (!at.node.IsSequence()) fail_type(context, at, expected);
  std::vector<SizeStep> steps;
  for (const auto& entry : at.node) {
    if (!entry.IsSequence() || entry.size() != 2) fail_type(context, at, expected);
    int values[2] = {0, 0};
    for (std::size_t k = 0; k < 2; ++k) {
      const std::string text = is_plain_scalar(entry[k]) ? entry[k].Scalar() : "";
      const char* end = text.data() + text.size();
      const auto result = std::from_chars(text.data(), end, values[k]);
      if (text.empty() || result.ec != std::errc() || result.ptr != end) {
        fail_type(context, at, expected);
      }
    }
    steps.push_back({values[0], values[1]});
  }
  out = std::move(steps);
}

void read_path(const Context& context, const Located& at, std::string& out) {
  if (!at.node.IsDefined()) return;
  std::string text;
  read_value(context, at, text);
  out = expand_home(text);
}

void read_top_k(const Context& context, const Located& at, int& out) {
  if (is_plain_scalar(at.node) && at.node.Scalar() == "auto") {
    out = 0;
  } else if (at.node.IsDefined()) {
    const auto value = is_plain_scalar(at.node) ? parse_integer(at.node.Scalar()) : std::nullopt;
    if (!value || *value < 1 || *value > INT_MAX) fail_type(context, at, "auto or an integer >= 1");
    out = static_cast<int>(*value);
  }
}

void read_optional_number(const Context& context, const Located& at, std::optional<double>& out) {
  if (!at.node.IsDefined()) return;
  if (at.node.IsNull()) {
    out.reset();
    return;
  }
  const auto value = is_plain_scalar(at.node) ? parse_real(at.node.Scalar()) : std::nullopt;
  if (!value) fail_type(context, at, "a number or null");
  out = value;
}

void read_optional_text(const Context& context, const Located& at,
                        std::optional<std::string>& out) {
  if (!at.node.IsDefined()) return;
  if (at.node.IsNull()) {
    out.reset();
    return;
  }
  std::string text;
  read_value(context, at, text);
  out = std::move(text);
}

void read_thresholds(const Context& context, const Located& at, std::vector<double>& out) {
  if (!at.node.IsDefined()) return;
  if (at.node.IsNull()) {
    out.clear();
    return;
  }
  if (!at.node.IsSequence()) fail_type(context, at, "null, or a list of numbers (one per class)");
  read_value(context, at, out);
}

void read_pos_weight(const Context& context, const Located& at, ClassWeights& out) {
  if (!at.node.IsDefined()) return;
  if (at.node.IsNull()) {
    out = {};
    return;
  }
  if (at.node.IsSequence()) {
    out.kind = ClassWeights::Kind::kList;
    read_value(context, at, out.weights);
    return;
  }
  if (is_plain_scalar(at.node) && at.node.Scalar() == "balanced") {
    out = {ClassWeights::Kind::kBalanced, {}};
    return;
  }
  fail_type(context, at, "null, balanced, or a list of numbers (one per class)");
}

void read_class_weights(const Context& context, const Located& at, ClassWeights& out) {
  if (!at.node.IsDefined()) return;
  if (at.node.IsSequence()) {
    out.kind = ClassWeights::Kind::kList;
    read_value(context, at, out.weights);
    return;
  }
  const std::string text = is_plain_scalar(at.node) ? at.node.Scalar() : "";
  if (text == "none" || text == "balanced") {
    out = {text == "none" ? ClassWeights::Kind::kNone : ClassWeights::Kind::kBalanced, {}};
    return;
  }
  fail_type(context, at, "none, balanced, or a list of numbers (one per class)");
}

// ---- maps --------------------------------------------------------------------------------

// The value `field` holds, as to_yaml writes it ("16", "[0.9, 0.99]", "null").
static std::string written(const Field& field) {
  YAML::Emitter out;
  field.write(out);
  return out.c_str();
}

static void emit_fields(const Walk& walk, const Located& at, const std::vector<Field>& fields) {
  YAML::Emitter& out = *walk.emit;
  out << YAML::BeginMap;
  for (const Field& f : fields) {
    out << YAML::Key << f.key << YAML::Value;
    if (f.section) {
      f.read(walk, child(at, f.key));
    } else {
      f.write(out);
    }
  }
  out << YAML::EndMap;
}

static void check_fields(const Walk& walk, const Located& at, const std::vector<Field>& fields) {
  for (const Field& f : fields) {
    const Located place = child(at, f.key);
    if (f.section) {
      f.read(walk, place);
    } else if (f.bounds) {
      const std::optional<double> value = f.number();  // null: nothing to check
      if (walk.list_all || (value && !f.bounds->contains(*value))) {
        (*walk.check)({place.path, f.bounds->expected.text, written(f), ""});
      }
    }
  }
}

void read_fields(const Walk& walk, const Located& at, const std::vector<Field>& fields) {
  if (walk.emit != nullptr) return emit_fields(walk, at, fields);
  if (walk.check != nullptr) return check_fields(walk, at, fields);
  if (walk.describe != nullptr) {
    for (const Field& f : fields) {
      const Located place = child(at, f.key);  // absent: a describe walk has no document
      walk.describe->push_back({place.path, f.section ? "" : f.type(), f.meaning.text, f.section});
      if (f.section) f.read(walk, place);
    }
    return;
  }
  std::vector<std::string> keys;
  for (const Field& f : fields) keys.push_back(f.key);
  if (walk.errors == nullptr) {
    expect_map(walk, at, keys);
    for (const Field& f : fields) f.read(walk, child(at, f.key));
    return;
  }
  check_map_keys(walk, at, keys, [&walk](const ConfigError& e) { walk.errors->push_back(e); });
  for (const Field& f : fields) {
    try {
      f.read(walk, child(at, f.key));
    } catch (const ConfigError& e) {  // named with its line; the field keeps its default
      walk.errors->push_back(e);
    }
  }
}

}  // namespace ltfit::config_internal
