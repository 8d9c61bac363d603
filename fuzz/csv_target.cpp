// Fuzz target: the CSV reader of the dataset layouts (src/data/csv_table.cpp).
//
// The input is the file's bytes, parsed under small limits so that the fuzzer reaches each of
// them. A malformed file must end in DataError and nothing else. Findings, besides crashes,
// sanitizer reports and memory beyond the file's size: an accepted table that breaks a limit
// (more rows, columns, cells or field bytes than allowed), a row that is not header.size()
// fields, row lines that do not increase, a table that written back with RFC 4180 quoting
// parses as another table, and csv_column not finding a header name at its own index or
// finding a column that is not there.
#include <cstdio>
#include <string>
#include <string_view>

#include "fuzz_checks.h"
#include "ltfit/data/csv_table.h"
#include "ltfit/util/error.h"
#include "targets.h"

namespace ltfit::fuzz {

namespace {

CsvLimits fuzz_limits() {
  CsvLimits limits;
  limits.max_rows = 64;
  limits.max_columns = 16;
  limits.max_field_bytes = 64;
  limits.max_cells = 256;
  return limits;
}

// `table` as an RFC 4180 writer with every field quoted writes it.
std::string written(const CsvTable& table) {
  std::string out;
  auto record = [&out](const std::vector<std::string>& fields) {
    for (std::size_t i = 0; i < fields.size(); ++i) {
      out += i > 0 ? ",\"" : "\"";
      for (const char c : fields[i]) out += c == '"' ? std::string("\"\"") : std::string(1, c);
      out += '"';
    }
    out += "\r\n";
  };
  record(table.header);
  for (const auto& row : table.rows) record(row);
  return out;
}

void check_shape(const CsvTable& table, const CsvLimits& limits) {
  const std::size_t columns = table.header.size();
  if (columns == 0 || columns > limits.max_columns) invariant_failed("header size out of limits");
  if (table.rows.size() > limits.max_rows || table.rows.size() * columns > limits.max_cells) {
    invariant_failed("more rows or cells than the limits allow");
  }
  if (table.lines.size() != table.rows.size()) invariant_failed("one line per row");
  for (std::size_t i = 0; i < table.rows.size(); ++i) {
    if (table.rows[i].size() != columns) invariant_failed("a row of another size than the header");
    if (table.lines[i] < (i > 0 ? table.lines[i - 1] + 1 : 2)) {
      invariant_failed("row lines do not increase");
    }
    for (const std::string& field : table.rows[i]) {
      if (field.size() > limits.max_field_bytes) invariant_failed("a field over max_field_bytes");
    }
  }
}

void check_round_trip(const CsvTable& table) {
  const std::string text = written(table);
  try {
    const CsvTable again = parse_csv(text, "written.csv");
    if (again.header != table.header || again.rows != table.rows) {
      std::fprintf(stderr, "--- written:\n%s\n", text.c_str());
      invariant_failed("a table written with RFC 4180 quoting parses as another table");
    }
  } catch (const DataError& e) {
    std::fprintf(stderr, "%s\n--- written:\n%s\n", e.what(), text.c_str());
    invariant_failed("a table written with RFC 4180 quoting does not parse");
  }
}

void check_columns(const CsvTable& table) {
  std::string absent = "\x01";
  for (std::size_t i = 0; i < table.header.size(); ++i) {
    if (csv_column(table, table.header[i], "fuzz.column") != i) {
      invariant_failed("csv_column does not find a header name at its own index");
    }
    absent += table.header[i];  // longer than any name: in no column
  }
  try {
    csv_column(table, absent, "fuzz.column");
    invariant_failed("csv_column found a column that is not there");
  } catch (const ConfigError& e) {
    note_refusal(e.what());
  }
}

}  // namespace

Outcome run_csv(std::string_view input) {
  const CsvLimits limits = fuzz_limits();
  CsvTable table;
  try {
    table = parse_csv(input, "fuzz.csv", limits);
  } catch (const DataError& e) {
    note_refusal(e.what());
    return Outcome::kRefused;
  }
  check_shape(table, limits);
  check_round_trip(table);
  check_columns(table);
  return Outcome::kAccepted;
}

}  // namespace ltfit::fuzz
