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

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "ltfit/config/config.h"

namespace ltfit::config_internal {

// ---- text helpers -------------------------------------------------------------------------

// "a, b, c"
inline std::string join(const std::vector<std::string>& items,
                        const std::string& separator = ", ") {
  std::string text;
  for (std::size_t i = 0; i < items.size(); ++i) text += (i ? separator : "") + items[i];
  return text;
}

// Levenshtein distance (insertions, deletions, substitutions), for "did you mean".
inline std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The choice closest to `word`, or "" when none is close enough to be a likely typo.
inline std::string closest(const std::string& word, const std::vector<std::string>& choices) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const auto& choice : choices) {
    const std::size_t distance = edit_distance(word, choice);
    if (distance < best_distance) {
      best = choice;
      best_distance = distance;
    }
  }
  return best;
}

// Shortest text that parses back to exactly `value` ("0.001", "1e-05", "25").
inline std::string format_number(double value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

// ---- rules -------------------------------------------------------------------------------

// A broken rule: the key, what was expected, the value found (as formatted from the struct).
struct Problem {
  std::string path;      // dotted key, e.g. "data.batch_size"
  std::string expected;  // e.g. "a positive integer"
  std::string found;     // the value as formatted from the struct, e.g. "-4"
  std::string hint;      // e.g. "did you mean 'resnet34'?"; may be empty
};
using Fail = std::function<void(const Problem&)>;  // reports a problem; must throw

// Checks every rule against `config`, calling `fail` on the first broken one (config_rules.cpp).
void validate_with(const Config& config, const Fail& fail);

}  // namespace ltfit::config_internal
