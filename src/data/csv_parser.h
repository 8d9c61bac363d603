// The RFC 4180 tokenizer behind csv_table.cpp, defined in csv_parser.cpp: a cursor that parses
// one record at a time within a CsvLimits, the hints the tokenizer's and the table's messages
// share, and the quoting of text in a message. Private to src/data.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ltfit/data/csv_table.h"

namespace ltfit::csv_internal {

inline constexpr const char* kLimitHint =
    "check that this is the intended file; the limits keep a hostile file from taking the "
    "machine's memory";
inline constexpr const char* kQuoteHint =
    "a field that holds a comma, a quote or a line break must be quoted as a whole, with each "
    "quote inside doubled: \"say \"\"hi\"\", then go\"";

// `text` in single quotes for a message: at most kShownBytes (cut at a UTF-8 boundary), control
// characters written as \xNN, so a hostile name cannot flood or drive the terminal.
std::string shown(std::string_view text);

// A cursor over the text that parses one record at a time and knows the physical line it is on
// (a line break is LF, CRLF or a lone CR, inside quotes too).
class CsvParser {
 public:
  CsvParser(std::string_view text, const std::string& source, const CsvLimits& limits)
      : text_(text), source_(source), limits_(limits) {}

  bool at_end() const { return pos_ >= text_.size(); }
  std::int64_t line() const { return line_; }

  // Moves past lines holding nothing but spaces and tabs.
  void skip_blank_lines();

  // Parses the record at the cursor (not at the end) and its line break. Stores its first
  // `keep` fields in `fields` (reusing the strings already there; the vector ends with
  // min(count, keep) of them); the others are parsed and counted only. Returns its field count.
  std::size_t parse_record(std::vector<std::string>& fields, std::size_t keep);

  [[noreturn]] void fail(std::int64_t line, const std::string& what, std::string hint) const;

 private:
  // 2 for CRLF, 1 for LF or a lone CR, 0 for anything else (or the end).
  std::size_t line_break_at(std::size_t at) const;

  // Parses one field into `out`; true when it ended its record.
  bool parse_field(std::string& out);
  bool parse_quoted(std::string& out);

  // Moves past the comma (false) or the line break (true) that ends a field; true at the end.
  bool end_field();
  void count_lines(std::size_t begin, std::size_t end);
  void check_field_size(std::size_t size, std::int64_t line) const;

  std::string_view text_;
  std::string discarded_;  // the field being skipped
  const std::string& source_;
  const CsvLimits& limits_;
  std::size_t pos_ = 0;
  std::int64_t line_ = 1;
};

}  // namespace ltfit::csv_internal
