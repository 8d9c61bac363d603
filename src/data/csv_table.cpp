// RFC 4180 CSV tables within limits; see csv_table.h.
#include "ltfit/data/csv_table.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdint>
#include <cstring>
#include <unordered_map>

#include "ltfit/util/error.h"
#include "ltfit/util/signals.h"

namespace ltfit {
namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";
constexpr std::size_t kShownBytes = 60;  // of a name quoted in a message
constexpr std::size_t kShownNames = 20;  // header names listed in a message

constexpr const char* kLimitHint =
    "check that this is the intended file; the limits keep a hostile file from taking the "
    "machine's memory";
constexpr const char* kQuoteHint =
    "a field that holds a comma, a quote or a line break must be quoted as a whole, with each "
    "quote inside doubled: \"say \"\"hi\"\", then go\"";

// `text` in single quotes for a message: at most kShownBytes (cut at a UTF-8 boundary), control
// characters written as \xNN, so a hostile name cannot flood or drive the terminal.
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

// The header's names for a message: the first kShownNames, then how many more.
std::string shown_names(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < kShownNames; ++i) {
    out += (i > 0 ? ", " : "") + shown(names[i]);
  }
  if (names.size() > kShownNames) {
    out += " and " + std::to_string(names.size() - kShownNames) + " more";
  }
  return out;
}

// A cursor over the text that parses one record at a time and knows the physical line it is on
// (a line break is LF, CRLF or a lone CR, inside quotes too).
class CsvParser {
 public:
  CsvParser(std::string_view text, const std::string& source, const CsvLimits& limits)
      : text_(text), source_(source), limits_(limits) {}

  bool at_end() const { return pos_ >= text_.size(); }
  std::int64_t line() const { return line_; }

  // Moves past lines holding nothing but spaces and tabs.
  void skip_blank_lines() {
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

  // Parses the record at the cursor (not at the end) and its line break. Stores its first
  // `keep` fields in `fields` (reusing the strings already there; the vector ends with
  // min(count, keep) of them); the others are parsed and counted only. Returns its field count.
  std::size_t parse_record(std::vector<std::string>& fields, std::size_t keep) {
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

  [[noreturn]] void fail(std::int64_t line, const std::string& what, std::string hint) const {
    throw DataError(source_ + ":" + std::to_string(line) + ": " + what, std::move(hint));
  }

 private:
  // 2 for CRLF, 1 for LF or a lone CR, 0 for anything else (or the end).
  std::size_t line_break_at(std::size_t at) const {
    if (at >= text_.size()) return 0;
    if (text_[at] == '\n') return 1;
    if (text_[at] != '\r') return 0;
    return at + 1 < text_.size() && text_[at + 1] == '\n' ? 2 : 1;
  }

  // Parses one field into `out`; true when it ended its record.
  bool parse_field(std::string& out) {
    if (pos_ < text_.size() && text_[pos_] == '"') return parse_quoted(out);
    const std::size_t end = std::min(text_.find_first_of(",\r\n", pos_), text_.size());
    check_field_size(end - pos_, line_);
    out.assign(text_.substr(pos_, end - pos_));
    pos_ = end;
    return end_field();
  }

  bool parse_quoted(std::string& out) {
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

  // Moves past the comma (false) or the line break (true) that ends a field; true at the end.
  bool end_field() {
    if (pos_ >= text_.size()) return true;
    if (text_[pos_] == ',') {
      ++pos_;
      return false;
    }
    pos_ += line_break_at(pos_);
    ++line_;
    return true;
  }

  void count_lines(std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      if (text_[i] == '\n' || (text_[i] == '\r' && line_break_at(i) == 1)) ++line_;
    }
  }

  void check_field_size(std::size_t size, std::int64_t line) const {
    if (size <= limits_.max_field_bytes) return;
    fail(line,
         "a field of more than " + std::to_string(limits_.max_field_bytes) +
             " bytes (the limit max_field_bytes)",
         kLimitHint);
  }

  std::string_view text_;
  std::string discarded_;  // the field being skipped
  const std::string& source_;
  const CsvLimits& limits_;
  std::size_t pos_ = 0;
  std::int64_t line_ = 1;
};

void read_header(CsvParser& parser, CsvTable& table) {
  parser.skip_blank_lines();
  if (parser.at_end()) {
    throw DataError(table.source + ": no header line: the file is empty or blank",
                    "a CSV file starts with a header line naming its columns, e.g. path,label");
  }
  const std::int64_t line = parser.line();
  parser.parse_record(table.header, table.header.max_size());
  std::unordered_map<std::string_view, std::size_t> seen;
  for (std::size_t i = 0; i < table.header.size(); ++i) {
    const auto [it, inserted] = seen.emplace(table.header[i], i);
    if (inserted) continue;
    parser.fail(line,
                "duplicate column name " + shown(table.header[i]) + " (columns " +
                    std::to_string(it->second) + " and " + std::to_string(i) + ", from 0)",
                "give each column of the header its own name");
  }
}

constexpr std::size_t kCsvStopEvery = 8192;  // rows between two looks at the stop flag

// Parses every row after the header: checks the row and cell limits and each row's field count,
// and passes the row's first `keep` fields and its line to `store`, which adds to the table and
// returns the bytes the table takes, checked against max_memory.
template <typename Store>
void read_rows(CsvParser& parser, const CsvTable& head, std::size_t keep, const CsvLimits& limits,
               Store&& store) {
  const std::size_t columns = head.header.size();
  std::uint64_t cells = 0;
  std::uint64_t rows = 0;
  std::vector<std::string> fields;
  for (parser.skip_blank_lines(); !parser.at_end(); parser.skip_blank_lines()) {
    const std::int64_t line = parser.line();
    if (rows >= limits.max_rows) {
      parser.fail(line,
                  "more than " + std::to_string(limits.max_rows) +
                      " rows after the header (the limit max_rows)",
                  kLimitHint);
    }
    if (columns > limits.max_cells - cells) {
      parser.fail(line,
                  "more than " + std::to_string(limits.max_cells) +
                      " fields in all rows together (the limit max_cells)",
                  kLimitHint);
    }
    if (++rows % kCsvStopEvery == 0) throw_if_stop_requested("reading '" + head.source + "'");
    const std::size_t count = parser.parse_record(fields, keep);
    if (count != columns) {
      parser.fail(line,
                  "a row of " + std::to_string(count) + " field" + (count == 1 ? "" : "s") +
                      ", but the header has " + std::to_string(columns) + " (" +
                      shown_names(head.header) + ")",
                  std::string("every row needs one field per header column; ") + kQuoteHint);
    }
    cells += columns;
    if (store(fields, line) > limits.max_memory) {
      parser.fail(line,
                  "the table would take more than " + std::to_string(limits.max_memory) +
                      " bytes of memory (the limit max_memory)",
                  kLimitHint);
    }
  }
}

// The heap bytes of a stored string: none while it fits the small-string buffer.
std::uint64_t heap_bytes(const std::string& text) {
  return text.capacity() > std::string().capacity() ? text.capacity() + 1 : 0;
}

// Closes the descriptor on scope exit.
struct CsvFd {
  int fd = -1;
  ~CsvFd() {
    if (fd >= 0) ::close(fd);
  }
};

const char* non_regular_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// The bytes of the regular file `path`, refused before reading when it is larger than
// `max_bytes` (and when it grows past it while read). util/input_file.h does the same for
// command-line files, but throws ConfigError, and a label file is data (DataError).
std::string read_bounded(const std::string& path, std::uint64_t max_bytes) {
  const std::string name = "CSV file '" + path + "'";
  CsvFd file{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (file.fd < 0) {
    const int error = errno;
    if (error == ENOENT) throw DataError(name + " does not exist", "check the path");
    throw DataError("cannot open " + name + ": " + std::strerror(error),
                    "check the path and its permissions");
  }
  struct stat info {};
  if (::fstat(file.fd, &info) != 0) {
    throw DataError("cannot stat " + name + ": " + std::strerror(errno));
  }
  if (!S_ISREG(info.st_mode)) {
    throw DataError(name + " is " + non_regular_kind(info.st_mode) + ", not a regular file",
                    "give the path of a CSV file");
  }
  const auto size = static_cast<std::uint64_t>(info.st_size);
  if (size > max_bytes) {
    throw DataError(name + " is " + std::to_string(size) + " bytes, over the limit max_bytes (" +
                        std::to_string(max_bytes) + ")",
                    kLimitHint);
  }
  std::string text;
  text.reserve(static_cast<std::size_t>(size));
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(file.fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw DataError("cannot read " + name + ": " + std::strerror(errno));
    if (n == 0) break;
    if (text.size() + static_cast<std::size_t>(n) > max_bytes) {
      throw DataError(name + " grew past the limit max_bytes (" + std::to_string(max_bytes) +
                      ") while read");
    }
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return text;
}

}  // namespace

namespace {

// `text` once its size is checked, without its BOM.
std::string_view checked_text(std::string_view text, const std::string& source,
                              const CsvLimits& limits) {
  if (text.size() > limits.max_bytes || text.size() > UINT32_MAX) {
    throw DataError(source + ": " + std::to_string(text.size()) +
                        " bytes, over the limit max_bytes (" + std::to_string(limits.max_bytes) +
                        ")",
                    kLimitHint);
  }
  if (text.substr(0, kBom.size()) == kBom) text.remove_prefix(kBom.size());
  return text;
}

}  // namespace

CsvTable parse_csv(std::string_view text, const std::string& source, const CsvLimits& limits) {
  text = checked_text(text, source, limits);
  CsvTable table;
  table.source = source;
  CsvParser parser(text, source, limits);
  read_header(parser, table);
  const std::size_t columns = table.header.size();
  std::uint64_t bytes = 0;
  read_rows(parser, table, columns, limits,
            [&](std::vector<std::string>& fields, std::int64_t line) {
              // A row: its vector (in `rows`), its line, and each string with its heap.
              bytes += sizeof fields + sizeof line + columns * sizeof(std::string);
              for (const std::string& field : fields) bytes += heap_bytes(field);
              table.rows.push_back(std::move(fields));
              table.lines.push_back(line);
              fields = {};
              fields.reserve(columns);
              return bytes;
            });
  return table;
}

CsvColumns parse_csv_columns(std::string_view text, const std::string& source, const CsvPick& pick,
                             const CsvLimits& limits) {
  text = checked_text(text, source, limits);
  CsvTable head;
  head.source = source;
  CsvParser parser(text, source, limits);
  read_header(parser, head);
  CsvColumns table;
  table.columns = pick(head);
  std::size_t keep = 0;
  for (const std::size_t column : table.columns) keep = std::max(keep, column + 1);
  keep = std::min(keep, head.header.size());
  // Reserved for the most rows the text can hold, so that the buffers never grow by copying:
  // the pages are taken only as rows are stored, and only the stored bytes are counted.
  const std::size_t breaks = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n') +
                                                      std::count(text.begin(), text.end(), '\r'));
  const std::size_t most_rows = std::min<std::uint64_t>(breaks + 1, limits.max_rows);
  table.lines.reserve(most_rows);
  table.ends.reserve(most_rows * table.columns.size());
  table.text.reserve(text.size());
  read_rows(parser, head, keep, limits, [&](std::vector<std::string>& fields, std::int64_t line) {
    for (const std::size_t column : table.columns) {
      table.text += fields.at(column);  // a pick beyond the header is a bug: out_of_range
      table.ends.push_back(static_cast<std::uint32_t>(table.text.size()));
    }
    table.lines.push_back(static_cast<std::uint32_t>(line));
    return table.text.size() + (table.ends.size() + table.lines.size()) * 4;
  });
  table.source = std::move(head.source);
  table.header = std::move(head.header);
  return table;
}

std::string_view CsvColumns::cell(std::size_t row, std::size_t kept) const {
  const std::size_t at = row * columns.size() + kept;
  const std::size_t begin = at == 0 ? 0 : ends[at - 1];
  return std::string_view(text).substr(begin, ends[at] - begin);
}

CsvTable read_csv_file(const std::string& path, const CsvLimits& limits) {
  return parse_csv(read_bounded(path, limits.max_bytes), path, limits);
}

CsvColumns read_csv_columns(const std::string& path, const CsvPick& pick, const CsvLimits& limits) {
  return parse_csv_columns(read_bounded(path, limits.max_bytes), path, pick, limits);
}

std::size_t csv_column(const CsvTable& table, const std::string& spec, const std::string& key) {
  const std::vector<std::string>& names = table.header;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == spec) return i;
  }
  std::size_t index = 0;
  const char* end = spec.data() + spec.size();
  const bool digits = !spec.empty() && spec.find_first_not_of("0123456789") == std::string::npos;
  const auto [stop, error] = std::from_chars(spec.data(), end, index);
  if (digits && error == std::errc() && stop == end && index < names.size()) return index;
  const std::string what = digits ? "column index " + shown(spec) + " is out of range"
                                  : "no column named " + shown(spec);
  throw ConfigError(key + ": " + what + " in " + table.source + ", whose " +
                        std::to_string(names.size()) + " column" +
                        (names.size() == 1 ? " is " : "s are ") + shown_names(names),
                    "give " + key + " as one of those names, or as a 0-based index below " +
                        std::to_string(names.size()));
}

std::string csv_quote(std::string_view field) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(field);
  std::string out = "\"";
  out.reserve(field.size() + 2);
  for (const char c : field) {
    out += c;
    if (c == '"') out += '"';
  }
  return out + "\"";
}

}  // namespace ltfit
