// Reading the config's values out of its YAML tree (src/config only, never installed), for the
// document walk in config_loader.cpp: the config-specific readers (durations, data.workers,
// data.max_pixels, data.formats, train.lr, the enumerations through config.h's parse_*) and
// read_fields, which checks a map's keys and reads each one, on top of yaml_reader.h (loading,
// located errors, typed readers), which the plan reader shares. Types and names only: ranges are
// the rules' job (config_rules.cpp). Each field also carries its meaning, so the loader's field
// lists are the one description of the config keys: a describe walk (Walk::describe) collects
// them for the reference (config_reference.h). Pure functions, thread-safe.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ltfit/config/config.h"
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
// A positive count of bytes: an integer, optionally with a unit ("4GiB", "512 MiB", "2GB").
void read_byte_count(const Context& context, const Located& at, std::uint64_t& out);
// `data.formats`: a list of format names (checked against kImageFormatNames by the rules).
void read_formats(const Context& context, const Located& at, std::vector<std::string>& out);
// `train.lr`: one number, or a list [low, high].
void read_lr(const Context& context, const Located& at, std::vector<double>& out);
// train.mixup.cutmix_minmax: null (empty) or a list of numbers (its length checked by the rules).
void read_minmax(const Context& context, const Located& at, std::vector<double>& out);
// data.augment.random_erasing.value: `random` (random_value) or a number (value).
void read_erasing_value(const Context& context, const Located& at, RandomErasingConfig& out);
// data.size_schedule: a list of [epoch, size] pairs (their order and ranges checked by the rules).
void read_size_schedule(const Context& context, const Located& at, std::vector<SizeStep>& out);
// A path (data.root, run.out_dir, data.csv.file): a string whose leading `~` is a home folder.
void read_path(const Context& context, const Located& at, std::string& out);
inline constexpr const char* kPathExpected = "path (a leading ~ is your home folder)";
// A string that may be null (data.csv.valid_column, data.csv.label_delim).
void read_optional_text(const Context& context, const Located& at, std::optional<std::string>& out);
// eval.thresholds: null (empty) or a list of numbers (one per class, checked when used).
void read_thresholds(const Context& context, const Located& at, std::vector<double>& out);
// train.pos_weight: null, balanced, or a list of numbers, one per class.
void read_pos_weight(const Context& context, const Located& at, ClassWeights& out);
// train.class_weights: none, balanced, or a list of numbers, one per class.
void read_class_weights(const Context& context, const Located& at, ClassWeights& out);

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

// ---- describing the keys (the reference, config_reference.h) --------------------------------

// A text of the reference written beside its field: a key's meaning, or what a custom reader
// accepts. consteval: a missing or empty text fails to compile, so no key goes undocumented.
struct DocText {
  consteval DocText(const char* value) : text(value) {  // NOLINT(google-explicit-constructor)
    if (value == nullptr || value[0] == '\0') throw "every config key needs a non-empty text";
  }
  const char* text;
};

// One key as the reference lists it.
struct KeyDoc {
  std::string path;      // dotted key, e.g. "data.augment.flip"
  std::string type;      // what it accepts, e.g. "integer", "one of auto, folders, kaggle"
  std::string meaning;   // what it does
  bool section = false;  // a map of keys (type is then empty)
};

// The loader's walk: where the values come from, and, for a describe walk (no document: every
// node absent, so the structs keep their defaults), the list that collects each key instead of
// reading it. With `errors`, a walk collects every unknown key and every value it cannot read
// there (the field keeps its default) instead of throwing at the first.
struct Walk : Context {
  std::vector<KeyDoc>* describe = nullptr;
  std::vector<ConfigError>* errors = nullptr;
};

// What a value of type T is, in the reference's words.
template <typename T>
constexpr const char* type_text() {
  if constexpr (std::is_same_v<T, bool>) return "boolean";
  if constexpr (std::is_same_v<T, int>) return "integer";
  if constexpr (std::is_same_v<T, std::uint64_t>) return "integer >= 0";
  if constexpr (std::is_same_v<T, double>) return "number";
  if constexpr (std::is_same_v<T, std::string>) return "string";
  if constexpr (std::is_same_v<T, std::vector<double>>) return "list of numbers";
  return nullptr;  // field() refuses it at compile time
}

// "one of a, b, c": an enumeration's names, from its parse_* (the table's own error message, so
// the reference lists exactly what the loader accepts, in the same order).
template <typename Enum>
std::string choices_text(Enum (*parse)(std::string_view)) {
  try {
    parse("");  // no enumeration has an empty name
  } catch (const ChoiceError& e) {
    return e.expected();
  }
  return "";
}

// ---- maps ----------------------------------------------------------------------------------

// One key of a map: how to read its node (which may be undefined: the key is absent), and what
// the reference says about it.
struct Field {
  std::string key;
  std::function<void(const Walk&, const Located&)> read;
  std::function<std::string()> type;  // what the key accepts; not called for a section
  DocText meaning;
  bool section = false;  // a nested map, read by a convert_* function
};

// `key` read with read() into `out`.
template <typename T>
Field field(std::string key, T& out, DocText meaning) {
  static_assert(type_text<T>() != nullptr, "add the type's text to type_text()");
  return {std::move(key),
          [&out](const Walk& walk, const Located& at) { yaml::read(walk, at, out); },
          [] { return std::string(type_text<T>()); }, meaning};
}

// `key` read by `reader` (read_workers, read_lr, ...) into `out`; `type` says what it accepts.
template <typename T>
Field field(std::string key, void (*reader)(const Context&, const Located&, T&), T& out,
            DocText type, DocText meaning) {
  return {std::move(key),
          [reader, &out](const Walk& walk, const Located& at) { reader(walk, at, out); },
          [type] { return std::string(type.text); }, meaning};
}

// `key`, an enumeration named by `parse` (config.h's parse_*), into `out`.
template <typename Enum>
Field field(std::string key, Enum (*parse)(std::string_view), Enum& out, DocText meaning) {
  return {std::move(key),
          [parse, &out](const Walk& walk, const Located& at) { read_choice(walk, at, parse, out); },
          [parse] { return choices_text(parse); }, meaning};
}

// `key`, a nested map read by `convert` (a convert_* function, which lists its own fields).
template <typename T>
Field section(std::string key, void (*convert)(const Walk&, const Located&, T&), T& out,
              DocText meaning) {
  return {std::move(key),
          [convert, &out](const Walk& walk, const Located& at) { convert(walk, at, out); }, nullptr,
          meaning, /*section=*/true};
}

// Checks that `at` holds only the fields' keys (expect_map, which lists them in this order), then
// reads each field in order (collecting into walk.errors, when given, instead of throwing). In a
// describe walk, appends each field to walk.describe instead (a section, then its own keys).
void read_fields(const Walk& walk, const Located& at, const std::vector<Field>& fields);

// Every key of the config, in the loader's order, from a describe walk of the loader's own field
// lists (config_loader.cpp).
std::vector<KeyDoc> describe_config();

}  // namespace ltfit::config_internal
