// RFC 4180 CSV files read as tables of strings, safe on hostile input: the dataset layouts read
// their label files through it.
//
// The result matches pandas.read_csv(path, dtype=str, keep_default_na=False) on well-formed
// files (tests/data/csv_oracle.sh checks it): the first record is the header; every value is a
// string, quotes removed, whitespace kept. Anything pandas would guess about (a ragged row, a
// quote left open, a duplicate column name) is refused instead, with the file and the line.
// Memory is bounded: the file's text by CsvLimits::max_bytes, the table built from it by
// CsvLimits::max_memory (its bytes counted as rows are stored); every other limit is checked
// while parsing, before the thing it bounds is stored. A dataset reads only the columns it uses
// (read_csv_columns: a few bytes a field beyond its text), so a wide or long file costs little.
// A stop request (util/signals.h) is honoured while a file is read and parsed: InterruptedError
// (exit 130) within a fraction of a second. Pure functions otherwise, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace ltfit {

// What parse_csv and read_csv_file accept; anything beyond is a DataError naming the limit and
// its value.
struct CsvLimits {
  std::uint64_t max_bytes = 512ull << 20;  // size of the file; a larger one is refused unread
  std::uint64_t max_rows = 20'000'000;     // records after the header
  std::size_t max_columns = 4096;          // fields of any record, the header's included
  std::size_t max_field_bytes = 1 << 20;   // bytes of one field, quotes removed
  // Fields of all rows together: each costs about 40 bytes beyond its text, so this bounds the
  // memory a file of many tiny fields (",,,,") takes.
  std::uint64_t max_cells = 100'000'000;
  // Bytes the parsed table takes (its strings and vectors, counted as they are stored; the
  // file's text, under max_bytes, aside): a file whose table would take more is refused with the
  // line reached.
  std::uint64_t max_memory = 512ull << 20;
};

struct CsvTable {
  std::string source;                          // file name used in messages
  std::vector<std::string> header;             // first record
  std::vector<std::vector<std::string>> rows;  // the records after the header, each header.size()
  std::vector<std::int64_t> lines;             // 1-based physical line where each row starts
};

// Parses `text` (RFC 4180): fields separated by commas, records by LF or CRLF (or a lone CR, as
// pandas does; inside a quoted field each is kept as it is), double-quoted fields with "" for a
// quote and commas and line breaks inside, a leading UTF-8 BOM dropped, blank lines (nothing but
// spaces and tabs) skipped as pandas' skip_blank_lines does, the last record with or without a
// final line break. A quote inside an unquoted field is an ordinary character (pandas).
// Throws DataError (exit 3) naming `source` and the line for: a quote left open, characters
// after a closing quote, a row whose field count differs from the header's, an empty file (no
// header), duplicate header names, and any limit exceeded (which limit, and its value).
CsvTable parse_csv(std::string_view text, const std::string& source, const CsvLimits& limits = {});

// Some columns of a CSV file, stored compactly: the kept fields' bytes back to back in one
// buffer with a 4-byte end offset each, and a 4-byte line number per row. A row costs its kept
// text plus 4 bytes a kept field and 4 bytes, whatever else the file holds (4,096 empty columns,
// say); the other columns are parsed and checked, not stored.
struct CsvColumns {
  std::string source;                // file name used in messages
  std::vector<std::string> header;   // the whole first record
  std::vector<std::size_t> columns;  // header positions kept, in the order the pick gave them

  std::size_t rows() const { return lines.size(); }
  // Row `row`'s field in the `kept`-th kept column (columns[kept]).
  std::string_view cell(std::size_t row, std::size_t kept) const;
  // 1-based physical line where row `row` starts.
  std::int64_t line(std::size_t row) const { return lines[row]; }

  std::string text;                  // the kept fields, row by row
  std::vector<std::uint32_t> ends;   // where each kept field ends in `text`
  std::vector<std::uint32_t> lines;  // per row
};

// Chooses the header positions to keep, given a table that holds only the header (for
// csv_column); it may throw, e.g. a ConfigError for a column the file does not have.
using CsvPick = std::function<std::vector<std::size_t>(const CsvTable& header_only)>;

// parse_csv, keeping only the columns `pick` chooses, with the same checks and errors.
CsvColumns parse_csv_columns(std::string_view text, const std::string& source, const CsvPick& pick,
                             const CsvLimits& limits = {});

// read_csv_file, keeping only the columns `pick` chooses.
CsvColumns read_csv_columns(const std::string& path, const CsvPick& pick,
                            const CsvLimits& limits = {});

// `field` as one RFC 4180 field: as it is unless it holds a comma, a quote or a line break, else
// in double quotes with each quote doubled. parse_csv reads it back byte for byte.
std::string csv_quote(std::string_view field);

// Reads the regular file `path` (size checked before anything is read or allocated: a file over
// limits.max_bytes, a directory, a FIFO or a device is refused) and parses it with `path` as
// the source. Throws DataError naming the path when it is missing or unreadable too.
CsvTable read_csv_file(const std::string& path, const CsvLimits& limits = {});

// The column that `spec` names: a header name, or else a 0-based index written in digits (a
// name wins over an index). `key` is the config key that gave it (e.g. "data.csv.path_column").
// Throws ConfigError (exit 2) naming the key, the file, the spec and the header's names when
// there is no such column.
std::size_t csv_column(const CsvTable& table, const std::string& spec, const std::string& key);

}  // namespace ltfit
