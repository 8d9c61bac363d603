// A regular expression matched against file names in time linear in the name (RE2): a user's
// pattern (data.label_pattern) cannot backtrack for ever, as ^((a|aa)+|[a-z]+)_\d+\.jpg$ does in
// std::regex on a name of 50 a's.
//
// The syntax is RE2's (https://github.com/google/re2/wiki/Syntax): Perl's classes (\d, \w, \s),
// groups, non-capturing (?:...), named (?P<name>...), alternation and repetition, anchors; no
// backreferences or lookaround. Names are matched byte for byte (Latin-1 mode), as std::regex on
// a std::string did: '.' matches any byte, whatever the name's encoding. Thread-safe: a compiled
// pattern is immutable and may be shared.
#pragma once

#include <memory>
#include <string>

namespace re2 {
class RE2;
}

namespace ltfit {

class NamePattern {
 public:
  // Compiles `pattern`; ok() says whether it compiled, error() why not.
  explicit NamePattern(const std::string& pattern);
  ~NamePattern();
  NamePattern(NamePattern&&) noexcept;
  NamePattern& operator=(NamePattern&&) noexcept;

  bool ok() const;
  std::string error() const;  // "" when ok()
  int groups() const;         // capturing groups; -1 when not ok()

  // Whether the whole of `name` matches; `first_group` receives group 1's text (empty when the
  // group took no part). Requires ok() and groups() >= 1.
  bool full_match(const std::string& name, std::string& first_group) const;

 private:
  std::unique_ptr<re2::RE2> regex_;
};

}  // namespace ltfit
