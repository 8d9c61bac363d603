// The RFC 4180 tokenizer behind csv_table.cpp (csv_parser.h): CsvParser's record and field
// parsing, line counting and limit checks, and the quoting of text in its messages.
#include "data/csv_parser.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ltfit/util/error.h"

namespace ltfit::csv_internal {
namespace {

constexpr std::size_t kShownBytes = 60;  // of a name quoted in a message

}  // namespace

std::string shown(std::string_view text) {
  std::size_t cut = text.size();
  if (cut > kShownBytes) {
    cut = kShownBytes;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  }
  std::string out = "'";
  for (const char c : text.substr(0, cut)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7F) {
      out += c;
      continue;
    }
    constexpr char kHex[] = "0123456789abcdef";
    out += {'\\', 'x', kHex[byte >> 4], kHex[byte & 0xF]};
  }
  return out + (cut < text.size() ? "'..." : "'");
}

void CsvParser::skip_blank_lines() {
  while (pos_ < text_.size()) {
    std::size_t i = pos_;
    while (i < text_.size() && (text_[i] == ' ' || text_[i] == '\t')) ++i;
    if (i == text_.size()) {
      pos_ = i;
      return;
    }
    const std::size_t breaks = line_break_at(i);
    if (breaks == 0) return;
    pos_ = i + breaks;
    ++line_;
  }
}

std::size_t CsvParser::parse_record(std::vector<std::string>& fields, std::size_t keep) {
  const std::int64_t start = line_;
  std::size_t count = 0;
  for (bool last = false; !last; ++count) {
    if (count == limits_.max_columns) {
      fail(start,
           "a record of more than " + std::to_string(limits_.max_columns) +
               " fields (the limit max_columns)",
           kLimitHint);
    }
    if (count < keep && count == fields.size()) fields.emplace_back();
    last = parse_field(count < keep ? fields[count] : discarded_);
  }
  if (fields.size() > std::min(count, keep)) fields.resize(std::min(count, keep));
  return count;
}

void CsvParser::fail(std::int64_t line, const std::string& what, std::string hint) const {
  throw DataError(source_ + ":" + std::to_string(line) + ": " + what, std::move(hint));
}

std::size_t CsvParser::line_break_at(std::size_t at) const {
  if (at >= text_.size()) return 0;
  if (text_[at] == '\n') return 1;
  if (text_[at] != '\r') return 0;
  return at + 1 < text_.size() && text_[at + 1] == '\n' ? 2 : 1;
}

bool CsvParser::parse_field(std::string& out) {
  if (pos_ < text_.size() && text_[pos_] == '"') return parse_quoted(out);
  const std::size_t end = std::min(text_.find_first_of(",\r\n", pos_), text_.size());
  check_field_size(end - pos_, line_);
  out.assign(text_.substr(pos_, end - pos_));
  pos_ = end;
  return end_field();
}

bool CsvParser::parse_quoted(std::string& out) {
  const std::int64_t start = line_;
  out.clear();
  ++pos_;  // the opening quote
  for (;;) {
    const std::size_t quote = text_.find('"', pos_);
    if (quote == std::string_view::npos) {
      fail(start, "a quoted field is not closed (its opening quote is on this line)", kQuoteHint);
    }
    check_field_size(out.size() + (quote - pos_), start);
    count_lines(pos_, quote);
    out.append(text_.substr(pos_, quote - pos_));
    pos_ = quote + 1;
    if (pos_ >= text_.size() || text_[pos_] != '"') break;
    check_field_size(out.size() + 1, start);
    out += '"';  // "" is a quote
    ++pos_;
  }
  if (pos_ < text_.size() && text_[pos_] != ',' && line_break_at(pos_) == 0) {
    fail(line_,
         "characters after the closing quote of a field (" + shown(text_.substr(pos_, 8)) + ")",
         kQuoteHint);
  }
  return end_field();
}

bool CsvParser::end_field() {
  if (pos_ >= text_.size()) return true;
  if (text_[pos_] == ',') {
    ++pos_;
    return false;
  }
  pos_ += line_break_at(pos_);
  ++line_;
  return true;
}

void CsvParser::count_lines(std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) {
    if (text_[i] == '\n' || (text_[i] == '\r' && line_break_at(i) == 1)) ++line_;
  }
}

void CsvParser::check_field_size(std::size_t size, std::int64_t line) const {
  if (size <= limits_.max_field_bytes) return;
  fail(line,
       "a field of more than " + std::to_string(limits_.max_field_bytes) +
           " bytes (the limit max_field_bytes)",
       kLimitHint);
}

}  // namespace ltfit::csv_internal
