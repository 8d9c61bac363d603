// Reading a YAML document that users write: the one helper of both YAML readers, the config
// loader (src/config) and the experiment plan reader (src/study). It loads a document and refuses
// duplicate keys anywhere in it (yaml-cpp would silently keep one of them), walks nodes with their
// key paths ("data.batch_size", "runs[2].set"), checks a map's keys (unknown ones get a "did you
// mean"), reads typed scalars, and fails with ConfigError (exit 2) naming the file, the 1-based
// line of the offending node (yaml-cpp marks are 0-based) and the key path, or the `--set` that
// supplied the value. Types only: ranges and enumerations are each reader's rules.
//
// Includes yaml-cpp: for the readers' .cpp files, not for headers other areas include.
// Pure functions, thread-safe.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ltfit/config/config_loader.h"
#include "ltfit/util/error.h"

namespace ltfit::yaml {

// Where values come from, for messages: the file (or "<defaults>") and the --set overrides that
// were spliced into its tree (none for a plan).
struct Context {
  std::string source;
  std::vector<Override> overrides;
};

// A node of the tree and its key path: "" is the root, "data.batch_size" a map value,
// "runs[2]" a list item.
struct Located {
  YAML::Node node;
  std::string path;
};

// ---- loading ---------------------------------------------------------------------------------

// Parses `text` (named context.source in messages) and checks that no map in it holds a key
// twice. Invalid YAML and duplicate keys throw ConfigError naming the file and line.
YAML::Node load_document(const std::string& text, const Context& context);

// Throws ConfigError "<file>:<line>: <path>: duplicate key" for the first map, at `at` or below
// it, that holds a key twice.
void check_unique_keys(const Context& context, const Located& at);

// ---- text ------------------------------------------------------------------------------------

// A whole integer ("12", "+3", "-4"); nullopt for anything else.
std::optional<long long> parse_integer(const std::string& text);
// A finite number ("3", "0.5", "1e-5", "+2"); nullopt for anything else, "inf" and "nan".
std::optional<double> parse_real(const std::string& text);

// ---- the tree and located errors -------------------------------------------------------------

// A scalar that was not quoted in the text.
bool is_plain_scalar(const YAML::Node& node);
// The value as a user wrote it, for "got ..." ("-4", "'16'" when quoted, "a list [1, 2]").
std::string describe(const YAML::Node& node);
// The ConfigError "<file>:<line>: <path>: <what>", or "<file>: <path>: <what> (from --set k=v)".
ConfigError error_at(const Context& context, const YAML::Node& node, const std::string& path,
                     const std::string& what, const std::string& hint = "");
// Throws error_at(...).
[[noreturn]] void fail_at(const Context& context, const YAML::Node& node, const std::string& path,
                          const std::string& what, const std::string& hint = "");
// Throws "... expected <expected>, got <the value as written>".
[[noreturn]] void fail_type(const Context& context, const Located& at, const std::string& expected);
// The child `key` of a map node; an undefined node when absent (or the parent is no map).
Located child(const Located& parent, const std::string& key);
// Item `index` of a list node ("runs[2]"); an undefined node when there is none.
Located item(const Located& parent, std::size_t index);
// Checks that `at` is absent, null (all defaults) or a map whose keys are all in `keys`; an
// unknown key fails with "did you mean" or the list of valid keys. (Keys are unique in a tree
// from load_document or checked by check_unique_keys.)
void expect_map(const Context& context, const Located& at, const std::vector<std::string>& keys);
// The same, but each unknown key goes to `report` (the error expect_map would throw for it), so
// a reader can name every one; a node that is not a map still throws.
void check_map_keys(const Context& context, const Located& at, const std::vector<std::string>& keys,
                    const std::function<void(const ConfigError&)>& report);

// ---- typed readers (types only; ranges are the caller's rules) --------------------------------

void read_value(const Context& context, const Located& at, int& out);
void read_value(const Context& context, const Located& at, std::uint64_t& out);
void read_value(const Context& context, const Located& at, double& out);
// Only YAML 1.2 booleans: yes/no/on/off are rejected rather than guessed.
void read_value(const Context& context, const Located& at, bool& out);
// Any scalar; bytes that are not UTF-8 only when a config.yaml written back could keep them.
void read_value(const Context& context, const Located& at, std::string& out);
void read_value(const Context& context, const Located& at, std::vector<double>& out);

// Writes the string `value` as config.yaml writes it: double-quoted when a plain scalar would not
// read back as the same string (empty or null-like, a blank at either end, a control character).
// read_value above checks a string's round trip through this same function.
void emit_string(YAML::Emitter& out, const std::string& value);

// Reads `at` into `out` when the key is present; absent keys keep what `out` holds.
template <typename T>
void read(const Context& context, const Located& at, T& out) {
  if (at.node.IsDefined()) read_value(context, at, out);
}

}  // namespace ltfit::yaml
