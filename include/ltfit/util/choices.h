// Choosing among names: lists of names for messages, the closest name for a "did you mean", and
// EnumNames, the one table per enumeration (config.h's, precision_name.h's) that turns a name into
// a value and back. An unknown name is a ChoiceError (a ConfigError, exit 2) naming the key, the
// choices and what was given. Header-only and torch-free, so config.h's readers and the fuzz
// build need nothing more. Pure functions, thread-safe.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ltfit/util/error.h"

namespace ltfit {

// "a, b, c"
inline std::string join(const std::vector<std::string>& items,
                        const std::string& separator = ", ") {
  std::string text;
  for (std::size_t i = 0; i < items.size(); ++i) text += (i ? separator : "") + items[i];
  return text;
}

// Levenshtein distance (insertions, deletions, substitutions), for "did you mean".
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
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
inline std::string closest(std::string_view word, const std::vector<std::string>& choices) {
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

// A name that is none of the choices. what(): "<key>: expected one of a, b, got '<text>'"; hint:
// "did you mean 'a'?" when one is close. A reader that knows where the text came from (a file and
// line, a command-line flag) words its own message with expected() and hint().
class ChoiceError : public ConfigError {
 public:
  ChoiceError(const std::string& key, std::string expected, const std::string& text,
              std::string hint)
      : ConfigError(key + ": expected " + expected + ", got '" + text + "'", std::move(hint)),
        expected_(std::move(expected)) {}
  const std::string& expected() const { return expected_; }  // "one of a, b"

 private:
  std::string expected_;
};

// The position of `text` in `names`; throws ChoiceError naming `key` when it is none of them.
inline std::size_t parse_choice(const std::string& key, const std::vector<std::string>& names,
                                std::string_view text) {
  const auto found = std::find(names.begin(), names.end(), text);
  if (found != names.end()) return static_cast<std::size_t>(found - names.begin());
  const std::string suggestion = closest(text, names);
  throw ChoiceError(key, "one of " + join(names), std::string(text),
                    suggestion.empty() ? "" : "did you mean '" + suggestion + "'?");
}

// An enumeration's names, one per enumerator in declaration order (values 0, 1, ...), and the
// config key that names it in messages. Each enumeration has one, behind its parse_* and *_name.
template <typename Enum>
struct EnumNames {
  std::string key;                 // e.g. "train.precision"
  std::vector<std::string> names;  // e.g. {"fp32", "fp16", "bf16"}

  // The value named `text`; ChoiceError otherwise.
  Enum parse(std::string_view text) const {
    return static_cast<Enum>(parse_choice(key, names, text));
  }
  // The name of `value`, as config files write it.
  const std::string& name(Enum value) const { return names.at(static_cast<std::size_t>(value)); }
};

}  // namespace ltfit
