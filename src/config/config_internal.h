// Internals shared by the three parts of the config code (src/config only, never installed):
//
//   config_loader.cpp  YAML text -> tree -> overrides -> structs (the only reader of the tree)
//   config_rules.cpp   validate: ranges and enumerations, written once against the structs
//   config_writer.cpp  to_yaml: structs -> YAML text
//
// Holds the text helpers more than one of them uses and the rules' reporting interface, through
// which the loader turns a broken rule into a message naming the file and line. No yaml-cpp here:
// the rules do not need it. Pure functions, thread-safe.
#pragma once

#include <charconv>
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ltfit/config/config.h"
#include "ltfit/util/choices.h"

namespace ltfit::config_internal {

// ---- text helpers -------------------------------------------------------------------------
// (join, closest: util/choices.h)

// Shortest text that parses back to exactly `value` ("0.001", "1e-05", "25").
inline std::string format_number(double value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

// `data.augment: none`: every augmentation off (no flip, rotation, zoom, lighting or warp, and a
// centred training crop, so training sees what validation sees); the loader reads it back and
// the writer writes such a config as `none`.
inline AugmentConfig augment_none() {
  AugmentConfig none;
  none.flip = false;
  none.max_rotate = 0.0;
  none.max_zoom = 1.0;
  none.max_lighting = 0.0;
  none.max_warp = 0.0;
  none.p_affine = 0.0;
  none.p_lighting = 0.0;
  none.random_crop = false;
  return none;  // crop resize, no policy, no random erasing: the defaults
}

// ---- rules -------------------------------------------------------------------------------

// The upper bounds several keys share: a finite but absurd number (train.lr: 1e308) must stop
// at load time with the key, not overflow somewhere inside LibTorch.
inline constexpr double kMaxLr = 10.0;
inline constexpr int kMaxEpochs = 100000;
inline constexpr int kMaxAccumulate = 1024;
inline constexpr double kMaxDivisor = 1e12;
inline constexpr double kMaxMinutes = 1e6;
inline constexpr double kMaxAlpha = 1000.0;
// A broken rule: the key, what was expected, the value found (as formatted from the struct).
struct Problem {
  std::string path;      // dotted key, e.g. "data.batch_size"
  std::string expected;  // e.g. "a positive integer"
  std::string found;     // the value as formatted from the struct, e.g. "-4"
  std::string hint;      // e.g. "did you mean 'resnet34'?"; may be empty
};
using Fail = std::function<void(const Problem&)>;  // reports a problem: throws or collects it

// Checks every number key against the Bounds its field declares (a checking walk of the loader's
// field lists, config_loader.cpp), calling `fail` on each out of range; with `list_all`, on
// every bounded key, in or out (for the reference).
void check_bounds(const Config& config, const Fail& fail, bool list_all);

// Checks every rule against `config`, calling `fail` on each broken one (config_rules.cpp); a
// `fail` that throws stops at the first.
void validate_with(const Config& config, const Fail& fail);

// Every rule, broken or not, as a Problem (path and expected; `found` is the default's), in the
// order they are checked: what the reference lists as each key's valid values.
std::vector<Problem> describe_rules();

// The keys config_warnings() may name, each with when it is ignored (for the reference).
std::vector<std::pair<std::string, std::string>> describe_ignored();

}  // namespace ltfit::config_internal
