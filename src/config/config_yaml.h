// Reading the config's values out of its YAML tree (src/config only, never installed), for the
// document walk in config_loader.cpp: the config-specific readers (durations, data.workers,
// data.max_pixels, data.formats, train.lr, the enumerations through config.h's parse_*) and
// read_fields, which checks a map's keys and reads each one, on top of yaml_reader.h (loading,
// located errors, typed readers), which the plan reader shares. Types and names only: ranges are
// the rules' job (config_rules.cpp). Pure functions, thread-safe.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ltfit/config/yaml_reader.h"
#include "ltfit/util/choices.h"

namespace ltfit::config_internal {

// The config code reads through the shared helper by its plain names.
using namespace ltfit::yaml;  // NOLINT(google-build-using-namespace): private header

inline constexpr const char* kDurationExpected =
    "a duration like 5h50m, 90m, 45s, a number of seconds, or null";

// ---- text ----------------------------------------------------------------------------------

// "a.b." -> {"a", "b", ""}.
std::vector<std::string> split(const std::string& text, char separator);
// "5h50m", "90m", "45s", "1.5h" (units in h, m, s order, each at most once) or plain seconds.
std::optional<double> duration_seconds(const std::string& text);

// The node at a dotted path, or an undefined node.
YAML::Node find_node(const YAML::Node& root, const std::string& path);

// ---- config-specific readers ---------------------------------------------------------------

// `train.time_limit`: null (no limit), a duration string or a number of seconds.
void read_duration(const Context& context, const Located& at, std::optional<double>& out);
// `data.workers`: `auto` (stored as 0) or an integer.
void read_workers(const Context& context, const Located& at, int& out);
// `data.max_pixels`: a pixel count, or null (stored as 0) for no limit.
void read_max_pixels(const Context& context, const Located& at, std::uint64_t& out);
// `data.formats`: a list of format names (checked against kImageFormatNames by the rules).
void read_formats(const Context& context, const Located& at, std::vector<std::string>& out);
// `train.lr`: one number, or a list [low, high].
void read_lr(const Context& context, const Located& at, std::vector<double>& out);

// An enumeration, read as a string and turned into its value by `parse` (config.h's parse_*);
// an unknown name fails at the node: "expected one of a, b, got c" with its "did you mean".
template <typename Enum>
void read_choice(const Context& context, const Located& at, Enum (*parse)(std::string_view),
                 Enum& out) {
  if (!at.node.IsDefined()) return;
  std::string text;
  read_value(context, at, text);
  try {
    out = parse(text);
  } catch (const ChoiceError& e) {
    fail_at(context, at.node, at.path, "expected " + e.expected() + ", got " + describe(at.node),
            e.hint());
  }
}

// ---- maps ----------------------------------------------------------------------------------

// One key of a map and how to read its node (which may be undefined: the key is absent).
struct Field {
  std::string key;
  std::function<void(const Context&, const Located&)> read;
};

// `key` read with read() into `out`.
template <typename T>
Field field(std::string key, T& out) {
  return {std::move(key),
          [&out](const Context& context, const Located& at) { yaml::read(context, at, out); }};
}

// `key` read by `reader` (read_workers, a nested map's convert_*, ...) into `out`.
template <typename T>
Field field(std::string key, void (*reader)(const Context&, const Located&, T&), T& out) {
  return {std::move(key),
          [reader, &out](const Context& context, const Located& at) { reader(context, at, out); }};
}

// `key`, an enumeration named by `parse` (config.h's parse_*), into `out`.
template <typename Enum>
Field field(std::string key, Enum (*parse)(std::string_view), Enum& out) {
  return {std::move(key), [parse, &out](const Context& context, const Located& at) {
            read_choice(context, at, parse, out);
          }};
}

// Checks that `at` holds only the fields' keys (expect_map, which lists them in this order), then
// reads each field in order.
void read_fields(const Context& context, const Located& at, const std::vector<Field>& fields);

}  // namespace ltfit::config_internal
