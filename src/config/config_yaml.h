// The config's one list of keys (src/config only, never installed): the config-specific readers
// (durations, data.workers, data.max_pixels, data.formats, train.lr, the enumerations through
// config.h's parse_*) and their writers, and read_fields, which walks a map's field list, on top
// of yaml_reader.h (loading, located errors, typed readers), which the plan reader shares. Each
// field of the loader's lists (config_loader.cpp, config_data_keys.cpp, config_train_keys.cpp)
// says how its key is read, how it is written (to_yaml), what it means (the reference), and,
// for a number, its valid range (validate): a Walk chooses which. Rules that relate keys, and
// lists' shapes, stay in config_rules.cpp. Pure functions, thread-safe.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "config/config_internal.h"
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
// eval.top_k: `auto` (stored as 0) or an integer >= 1.
void read_top_k(const Context& context, const Located& at, int& out);
// A number that may be null (train.optimizer.eps, train.optimizer.max_grad_norm).
void read_optional_number(const Context& context, const Located& at, std::optional<double>& out);
// A string that may be null (data.csv.valid_column, data.csv.label_delim).
void read_optional_text(const Context& context, const Located& at, std::optional<std::string>& out);
// eval.thresholds: null (empty) or a list of numbers (one per class, checked when used).
void read_thresholds(const Context& context, const Located& at, std::vector<double>& out);
// train.pos_weight: null, balanced, or a list of numbers, one per class.
void read_pos_weight(const Context& context, const Located& at, ClassWeights& out);
// train.class_weights: none, balanced, or a list of numbers, one per class.
void read_class_weights(const Context& context, const Located& at, ClassWeights& out);

// ---- writers: each custom reader's value as that reader reads it back (config_writer.cpp) ----

// A plain value in the form read() reads back: a boolean, an integer, a number in its shortest
// exact text, a string (quoted when a plain scalar would not carry it back), a flow list.
void write_value(YAML::Emitter& out, bool value);
void write_value(YAML::Emitter& out, int value);
void write_value(YAML::Emitter& out, std::uint64_t value);
void write_value(YAML::Emitter& out, double value);
void write_value(YAML::Emitter& out, const std::string& value);
void write_value(YAML::Emitter& out, const std::vector<double>& values);

void write_duration(YAML::Emitter& out, const std::optional<double>& seconds);  // 5h50m, or null
void write_workers(YAML::Emitter& out, const int& workers);                     // auto for 0
void write_max_pixels(YAML::Emitter& out, const std::uint64_t& pixels);         // null for 0
void write_byte_count(YAML::Emitter& out, const std::uint64_t& bytes);
void write_formats(YAML::Emitter& out, const std::vector<std::string>& formats);
void write_lr(YAML::Emitter& out, const std::vector<double>& lr);  // one number, or the list
// null for an empty list (read_minmax, read_thresholds), else the list.
void write_optional_list(YAML::Emitter& out, const std::vector<double>& values);
void write_erasing_value(YAML::Emitter& out, const RandomErasingConfig& erasing);
void write_size_schedule(YAML::Emitter& out, const std::vector<SizeStep>& steps);
void write_path(YAML::Emitter& out, const std::string& path);
void write_optional_text(YAML::Emitter& out, const std::optional<std::string>& text);
// eval.top_k: auto for 0.
void write_top_k(YAML::Emitter& out, const int& top_k);
void write_optional_number(YAML::Emitter& out, const std::optional<double>& value);  // or null
void write_pos_weight(YAML::Emitter& out, const ClassWeights& weights);     // null, balanced, list
void write_class_weights(YAML::Emitter& out, const ClassWeights& weights);  // none, balanced, list

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

// A text of the reference written beside its field: a key's meaning, what a custom reader
// accepts, a range's valid values. consteval: a missing or empty text fails to compile, so no
// key goes undocumented.
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

// A number key's valid values: low to high, either end open or closed (the infinities: no
// bound), and the words a broken range and the reference show. NaN is never inside.
inline constexpr double kInfinity = std::numeric_limits<double>::infinity();
struct Bounds {
  double low = -kInfinity;
  double high = kInfinity;
  bool low_open = false;
  bool high_open = false;
  DocText expected;

  bool contains(double v) const {
    return (low_open ? v > low : v >= low) && (high_open ? v < high : v <= high);
  }
};

// The common shapes, in interval notation: [low, high], [low, high), (low, high], (low, high),
// and >= low.
inline Bounds closed(double low, double high, DocText expected) {
  return {low, high, false, false, expected};
}
inline Bounds closed_open(double low, double high, DocText expected) {
  return {low, high, false, true, expected};
}
inline Bounds open_closed(double low, double high, DocText expected) {
  return {low, high, true, false, expected};
}
inline Bounds open_open(double low, double high, DocText expected) {
  return {low, high, true, true, expected};
}
inline Bounds at_least(double low, DocText expected) {
  return {low, kInfinity, false, false, expected};
}

static_assert(kMaxLoaderWorkers == 256, "data.workers' expected text names 256");

// The loader's walk over its field lists, one of four (the first set pointer chooses):
//   describe  collects each key for the reference (no document: every node absent, so the
//             structs keep their defaults);
//   emit      writes each key's value from the structs (to_yaml);
//   check     checks each number against its Bounds, reporting a broken one (with list_all,
//             every one, for the reference's valid values);
//   otherwise reads the document into the structs. With `errors`, a reading walk collects every
//             unknown key and every value it cannot read there (the field keeps its default)
//             instead of throwing at the first.
struct Walk : Context {
  std::vector<KeyDoc>* describe = nullptr;
  YAML::Emitter* emit = nullptr;
  const Fail* check = nullptr;
  bool list_all = false;
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

// One key of a map: how to read its node (which may be undefined: the key is absent), how to
// write its value, what the reference says about it, and a number's range.
struct Field {
  std::string key;
  std::function<void(const Walk&, const Located&)> read;  // a section: its convert_*, any walk
  std::function<void(YAML::Emitter&)> write;              // not for a section
  std::function<std::string()> type;                      // what it accepts; not for a section
  DocText meaning;
  bool section = false;  // a nested map, read by a convert_* function
  std::optional<Bounds> bounds;
  std::function<std::optional<double>()> number;  // the value the bounds check (null: none)
};

// The value a number field's bounds check; a null optional number is not checked.
template <typename T>
std::function<std::optional<double>()> number_of(const T& out) {
  if constexpr (std::is_arithmetic_v<T>) {
    return [&out] { return std::optional<double>(static_cast<double>(out)); };
  } else if constexpr (std::is_same_v<T, std::optional<double>>) {
    return [&out] { return out; };
  } else {
    return nullptr;
  }
}

// `key` read with read() into `out`, written with write_value(); a number may have bounds.
template <typename T>
Field field(std::string key, T& out, DocText meaning, std::optional<Bounds> bounds = {}) {
  static_assert(type_text<T>() != nullptr, "add the type's text to type_text()");
  static_assert(std::is_arithmetic_v<T> || std::is_same_v<T, std::string> ||
                    std::is_same_v<T, std::vector<double>>,
                "add write_value() for the type");
  return {std::move(key),
          [&out](const Walk& walk, const Located& at) { yaml::read(walk, at, out); },
          [&out](YAML::Emitter& emitter) { write_value(emitter, out); },
          [] { return std::string(type_text<T>()); },
          meaning,
          false,
          bounds,
          number_of(out)};
}

// `key` read by `reader` (read_workers, read_lr, ...) into `out` and written by its `writer`;
// `type` says what it accepts.
template <typename T>
Field field(std::string key, void (*reader)(const Context&, const Located&, T&),
            void (*writer)(YAML::Emitter&, const T&), T& out, DocText type, DocText meaning,
            std::optional<Bounds> bounds = {}) {
  return {std::move(key),
          [reader, &out](const Walk& walk, const Located& at) { reader(walk, at, out); },
          [writer, &out](YAML::Emitter& emitter) { writer(emitter, out); },
          [type] { return std::string(type.text); },
          meaning,
          false,
          bounds,
          number_of(out)};
}

// `key`, an enumeration read by `parse` (config.h's parse_*) and written by `name` (its *_name).
template <typename Enum, typename Name>
Field field(std::string key, Enum (*parse)(std::string_view), Name name, Enum& out,
            DocText meaning) {
  return {std::move(key),
          [parse, &out](const Walk& walk, const Located& at) { read_choice(walk, at, parse, out); },
          [name, &out](YAML::Emitter& emitter) { write_value(emitter, std::string(name(out))); },
          [parse] { return choices_text(parse); },
          meaning,
          false,
          std::nullopt,
          nullptr};
}

// `key`, a nested map read by `convert` (a convert_* function, which lists its own fields).
template <typename T>
Field section(std::string key, void (*convert)(const Walk&, const Located&, T&), T& out,
              DocText meaning) {
  return {std::move(key),
          [convert, &out](const Walk& walk, const Located& at) { convert(walk, at, out); },
          nullptr,
          nullptr,
          meaning,
          /*section=*/true,
          std::nullopt,
          nullptr};
}

// Walks a map's fields as `walk` says. Reading: checks that `at` holds only the fields' keys
// (expect_map, which lists them in this order), then reads each field in order (collecting into
// walk.errors, when given, instead of throwing). Describing: appends each field to
// walk.describe (a section, then its own keys). Emitting: writes the map. Checking: checks each
// bounded number. Sections are walked in every walk.
void read_fields(const Walk& walk, const Located& at, const std::vector<Field>& fields);

// Every key of the config, in the loader's order, from a describe walk of the loader's own field
// lists (config_loader.cpp).
std::vector<KeyDoc> describe_config();

}  // namespace ltfit::config_internal
