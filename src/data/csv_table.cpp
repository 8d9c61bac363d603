// RFC 4180 CSV tables within limits (csv_table.h): the file read within max_bytes, the header
// and rows taken through the tokenizer of csv_parser.h and checked against the row, cell and
// memory limits into a whole table or only the picked columns, and column lookup and quoting.
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

#include "data/csv_parser.h"
#include "ltfit/util/error.h"
#include "ltfit/util/signals.h"

namespace ltfit {

using namespace csv_internal;

namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";
constexpr std::size_t kShownNames = 20;  // header names listed in a message

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
