// File-name patterns through RE2; see name_pattern.h.
#include "ltfit/util/name_pattern.h"

#include <re2/re2.h>

namespace ltfit {
namespace {

re2::RE2::Options pattern_options() {
  re2::RE2::Options options;
  options.set_encoding(re2::RE2::Options::EncodingLatin1);
  options.set_log_errors(false);  // the caller reports error() with the key at fault
  return options;
}

}  // namespace

NamePattern::NamePattern(const std::string& pattern)
    : regex_(std::make_unique<re2::RE2>(pattern, pattern_options())) {}

NamePattern::~NamePattern() = default;
NamePattern::NamePattern(NamePattern&&) noexcept = default;
NamePattern& NamePattern::operator=(NamePattern&&) noexcept = default;

bool NamePattern::ok() const { return regex_ && regex_->ok(); }

std::string NamePattern::error() const { return ok() || !regex_ ? "" : regex_->error(); }

int NamePattern::groups() const { return ok() ? regex_->NumberOfCapturingGroups() : -1; }

bool NamePattern::full_match(const std::string& name, std::string& first_group) const {
  first_group.clear();
  return re2::RE2::FullMatch(name, *regex_, &first_group);
}

}  // namespace ltfit
