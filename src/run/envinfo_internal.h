// Internals shared by the parts of envinfo (private to src/run): envinfo.cpp probes the machine,
// envinfo_parse.cpp turns the texts it reads into fields (pure functions), envinfo_format.cpp
// writes EnvInfo as JSON and as a table. Constants and pure text helpers only.
#pragma once

#include <string>
#include <utility>

namespace ltfit::envinfo_internal {

inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kGiB = 1024.0 * kMiB;

// `s` without surrounding blanks and double quotes.
std::string trim(const std::string& s);

// "key <sep> value" -> (key, value), both trimmed; key empty when the line has no `sep`.
std::pair<std::string, std::string> split_key_value(const std::string& line, char sep);

}  // namespace ltfit::envinfo_internal
