// Reading values out of the config's YAML tree (src/config only, never installed), for the
// document walk in config_loader.cpp: where values came from (the file, the --set overrides),
// nodes with their dotted key paths, errors that name the file and line of the offending node
// (yaml-cpp marks are 0-based; messages are 1-based) or the --set that supplied it, type-checked
// readers of scalars and lists, and read_fields, which checks a map's keys and reads each one.
// Types only: ranges and enumerations are the rules' job (config_rules.cpp). Only src/config
// includes yaml-cpp. Pure functions, thread-safe.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ltfit/config/config_loader.h"

namespace ltfit::config_internal {

inline constexpr const char* kDurationExpected =
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

// ---- text ----------------------------------------------------------------------------------

// "a.b." -> {"a", "b", ""}.
std::vector<std::string> split(const std::string& text, char separator);
// A whole integer ("12", "+3", "-4"); nullopt for anything else.
std::optional<long long> parse_integer(const std::string& text);
// A finite number ("3", "0.5", "1e-5", "+2"); nullopt for anything else, "inf" and "nan".
std::optional<double> parse_real(const std::string& text);
// "5h50m", "90m", "45s", "1.5h" (units in h, m, s order, each at most once) or plain seconds.
std::optional<double> duration_seconds(const std::string& text);

// ---- the tree and located errors -------------------------------------------------------------

// A scalar that was not quoted in the text.
bool is_plain_scalar(const YAML::Node& node);
// The value as a user wrote it, for "got ..." ("-4", "'16'" when quoted, "a list [1, 2]").
std::string describe(const YAML::Node& node);
// Throws ConfigError "<file>:<line>: <path>: <what>", or "<file>: <path>: <what> (from --set k=v)".
[[noreturn]] void fail_at(const Context& context, const YAML::Node& node, const std::string& path,
                          const std::string& what, const std::string& hint = "");
// Throws "... expected <expected>, got <the value as written>".
[[noreturn]] void fail_type(const Context& context, const Located& at, const std::string& expected);
// The child `key` of a map node; an undefined node when absent (or the parent is no map).
Located child(const Located& parent, const std::string& key);
// The node at a dotted path, or an undefined node.
YAML::Node find_node(const YAML::Node& root, const std::string& path);
// Checks that `at` is absent, null (all defaults) or a map whose keys are all in `keys`, each
// once; an unknown key fails with "did you mean" or the list of valid keys.
void expect_map(const Context& context, const Located& at, const std::vector<std::string>& keys);

// ---- typed readers (types only; ranges are the rules' job) -----------------------------------

void read_value(const Context& context, const Located& at, int& out);
void read_value(const Context& context, const Located& at, std::uint64_t& out);
void read_value(const Context& context, const Located& at, double& out);
// Only YAML 1.2 booleans: yes/no/on/off are rejected rather than guessed.
void read_value(const Context& context, const Located& at, bool& out);
void read_value(const Context& context, const Located& at, std::string& out);
void read_value(const Context& context, const Located& at, std::vector<double>& out);
// `train.time_limit`: null (no limit), a duration string or a number of seconds.
void read_value(const Context& context, const Located& at, std::optional<double>& out);

// Reads `at` into `out` when the key is present; absent keys keep the struct's default.
template <typename T>
void read(const Context& context, const Located& at, T& out) {
  if (at.node.IsDefined()) read_value(context, at, out);
}

// `data.workers`: `auto` (stored as 0) or an integer.
void read_workers(const Context& context, const Located& at, int& out);
// `data.max_pixels`: a pixel count, or null (stored as 0) for no limit.
void read_max_pixels(const Context& context, const Located& at, std::uint64_t& out);
// `data.formats`: a list of format names (checked against kImageFormatNames by the rules).
void read_formats(const Context& context, const Located& at, std::vector<std::string>& out);
// `train.lr`: one number, or a list [low, high].
void read_lr(const Context& context, const Located& at, std::vector<double>& out);

// ---- maps ----------------------------------------------------------------------------------

// One key of a map and how to read its node (which may be undefined: the key is absent).
struct Field {
  std::string key;
  std::function<void(const Context&, const Located&)> read;
};

// `key` read with read() into `out`.
template <typename T>
Field field(std::string key, T& out) {
  return {std::move(key), [&out](const Context& context, const Located& at) {
            config_internal::read(context, at, out);
          }};
}

// `key` read by `reader` (read_workers, a nested map's convert_*, ...) into `out`.
template <typename T>
Field field(std::string key, void (*reader)(const Context&, const Located&, T&), T& out) {
  return {std::move(key),
          [reader, &out](const Context& context, const Located& at) { reader(context, at, out); }};
}

// Checks that `at` holds only the fields' keys (expect_map, which lists them in this order), then
// reads each field in order.
void read_fields(const Context& context, const Located& at, const std::vector<Field>& fields);

}  // namespace ltfit::config_internal
