// Writing JSON documents whose strings may hold any bytes (file, folder, class and root names).
//
// nlohmann::json refuses to dump a string that is not valid UTF-8 (type_error 316). Every JSON
// document ltfit writes (summary.json, env.json, timing.json, experiment results, every --json
// output) goes through dump_json, which escapes every string and object key with escape_utf8
// (utf8.h: valid UTF-8 kept, `\` -> `\\`, any other byte -> `\xNN`), so the output is always
// valid and the names are recoverable exactly with unescape_utf8. Thread-safe.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace ltfit {

// `document` with every string value and object key escaped, dumped with `indent` (-1: one
// line). Never throws for string content.
std::string dump_json(const nlohmann::json& document, int indent = 2);
std::string dump_json(const nlohmann::ordered_json& document, int indent = 2);

// The escaped form of a string read back from one of our JSON documents, unescaped; the text
// itself when it holds no valid escape (a document written by something else).
std::string unescape_json_string(const std::string& text);

}  // namespace ltfit
