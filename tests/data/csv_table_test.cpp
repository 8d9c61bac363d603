// CSV tables (data/csv_table.h): RFC 4180 quoting, line breaks and blank lines as pandas reads
// them, the line of every row, each refusal naming the file, the line and (for a limit) its name
// and value, columns by name or index, bounded file reads. Random tables written with RFC quoting
// parse back to themselves; random bytes end in a table or a DataError, nothing else.
// "[csv_oracle]" (hidden; run by tests/data/csv_oracle.sh, skipped visibly without pandas) writes
// the parse of the files in LTFIT_CSV_ORACLE_DIR as JSON for pandas to compare.
#include "ltfit/data/csv_table.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Contains;
using ltfit::CsvLimits;
using ltfit::CsvTable;
using ltfit::parse_csv;
using Rows = std::vector<std::vector<std::string>>;

namespace {

// The message of the DataError parsing `text` throws, or "(accepted)".
std::string refusal(std::string_view text, const CsvLimits& limits = {}) {
  try {
    parse_csv(text, "t.csv", limits);
  } catch (const ltfit::DataError& e) {
    return e.what();
  }
  return "(accepted)";
}

std::string column_error(const CsvTable& table, const std::string& spec) {
  try {
    ltfit::csv_column(table, spec, "data.csv.path_column");
  } catch (const ltfit::ConfigError& e) {
    return e.what();
  }
  return "(found)";
}

std::string file_error(const std::string& path, const CsvLimits& limits = {}) {
  try {
    ltfit::read_csv_file(path, limits);
  } catch (const ltfit::DataError& e) {
    return e.what();
  }
  return "(read)";
}

// `field` as an RFC 4180 writer writes it: quoted (quotes doubled) when it must be, or when asked.
std::string rfc_field(const std::string& field, bool quote_anyway) {
  if (!quote_anyway && field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string out = "\"";
  for (const char c : field) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

TEST_CASE("csv: quotes removed, doubled quotes, commas and line breaks inside, spaces kept",
          "[csv]") {
  const CsvTable t = parse_csv(
      "name,note\n\"a,b\",\"say \"\"hi\"\"\"\n\" x \", y \n\"two\nlines\",\"\"\n", "t.csv");
  CHECK(t.source == "t.csv");
  CHECK(t.header == std::vector<std::string>{"name", "note"});
  CHECK(t.rows == Rows{{"a,b", "say \"hi\""}, {" x ", " y "}, {"two\nlines", ""}});
  CHECK(t.lines == std::vector<std::int64_t>{2, 3, 4});
}

TEST_CASE("csv_quote: quotes only what must be, and parse_csv reads it back byte for byte",
          "[csv]") {
  CHECK(ltfit::csv_quote("plain name.jpg") == "plain name.jpg");
  CHECK(ltfit::csv_quote("") == "");
  CHECK(ltfit::csv_quote("a,b") == "\"a,b\"");
  CHECK(ltfit::csv_quote("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(ltfit::csv_quote("two\nlines") == "\"two\nlines\"");
  CHECK(ltfit::csv_quote("cr\r") == "\"cr\r\"");
  const std::vector<std::string> fields{
      "a,b",  "\"", "x\r\ny", " sp ", std::string("n\0ul", 4), "\xff\xfe bytes",
      "\"\"", ",",  "end\""};
  std::string text = "f\n";
  for (const auto& f : fields) text += ltfit::csv_quote(f) + "\n";
  const CsvTable t = parse_csv(text, "q.csv");
  REQUIRE(t.rows.size() == fields.size());
  for (std::size_t i = 0; i < fields.size(); ++i) CHECK(t.rows[i][0] == fields[i]);
}

TEST_CASE("csv: a row's line counts the line breaks inside earlier quoted fields", "[csv]") {
  const CsvTable t =
      parse_csv("a,b\n\"1\n2\r\n3\",x\n4,\"y\r\nz\"\n5,6\n\n7,8\n9,\"\"\"\n\"\n", "t.csv");
  CHECK(t.rows == Rows{{"1\n2\r\n3", "x"}, {"4", "y\r\nz"}, {"5", "6"}, {"7", "8"}, {"9", "\"\n"}});
  CHECK(t.lines == std::vector<std::int64_t>{2, 5, 7, 9, 10});
  CHECK_THAT(refusal("a,b\n\"1\n2\",x\n3\n"), Contains("t.csv:4:"));
}

TEST_CASE("csv: CRLF, a lone CR, a BOM, no final line break", "[csv]") {
  const Rows expected{{"1", "2"}, {"3", "4"}};
  for (const std::string text : {"a,b\r\n1,2\r\n3,4\r\n", "a,b\r1,2\r3,4", "a,b\n1,2\n3,4",
                                 "\xEF\xBB\xBF"
                                 "a,b\n1,2\n3,4\n",
                                 "\xEF\xBB\xBF\"a\",b\r\n1,2\r\n3,4"}) {
    INFO(text);
    const CsvTable t = parse_csv(text, "t.csv");
    CHECK(t.header == std::vector<std::string>{"a", "b"});
    CHECK(t.rows == expected);
    CHECK(t.lines == std::vector<std::int64_t>{2, 3});
  }
  // A lone CR inside quotes is kept; a BOM after the start is data.
  const CsvTable t = parse_csv("a,b\n\"x\ry\",\xEF\xBB\xBFz\n", "t.csv");
  CHECK(t.rows == Rows{{"x\ry", "\xEF\xBB\xBFz"}});
  CHECK(parse_csv("a,b\n1,\n", "t.csv").rows == Rows{{"1", ""}});
  CHECK(parse_csv("a,b\n1,", "t.csv").rows == Rows{{"1", ""}});
  CHECK(parse_csv("a,b\n1,2\r\r\n3,4", "t.csv").lines == std::vector<std::int64_t>{2, 4});
}

TEST_CASE("csv: blank lines (spaces and tabs only) are skipped, as pandas does", "[csv]") {
  const CsvTable t = parse_csv("\n \n\t\na,b\n\n1,2\n  \t \r\n\r\n3,4\n\n \n", "t.csv");
  CHECK(t.header == std::vector<std::string>{"a", "b"});
  CHECK(t.rows == Rows{{"1", "2"}, {"3", "4"}});
  CHECK(t.lines == std::vector<std::int64_t>{6, 9});
  // Not blank: a comma, a quoted empty field, any other character.
  CHECK(parse_csv("a,b\n,\n", "t.csv").rows == Rows{{"", ""}});
  CHECK(parse_csv("a\n\"\"\n  x\n", "t.csv").rows == Rows{{""}, {"  x"}});
  CHECK(parse_csv("a,b\n", "t.csv").rows.empty());
  CHECK(parse_csv("a,b", "t.csv").rows.empty());
}

TEST_CASE("csv: a quote inside an unquoted field is an ordinary character", "[csv]") {
  CHECK(parse_csv("a,b\nab\"c,5\" disk\n", "t.csv").rows == Rows{{"ab\"c", "5\" disk"}});
  CHECK(parse_csv("a,b\n \"x\",y\n", "t.csv").rows == Rows{{" \"x\"", "y"}});
}

TEST_CASE("csv: a row with another field count is refused, naming its line", "[csv]") {
  const std::string fewer = refusal("path,label\nx.jpg,1\n\ny.jpg\n");
  CHECK_THAT(fewer, Contains("t.csv:4:") && Contains("a row of 1 field,") &&
                        Contains("header has 2 ('path', 'label')"));
  const std::string more = refusal("path,label\nx.jpg,1\ny,jpg,2\n");
  CHECK_THAT(more, Contains("t.csv:3:") && Contains("a row of 3 fields"));
  CHECK_THAT(refusal("a,b\n1,2,\n"), Contains("t.csv:2:") && Contains("3 fields"));
}

TEST_CASE("csv: a quote left open is refused at the line it opened on", "[csv]") {
  CHECK_THAT(refusal("a,b\n1,2\n3,\"four\n5,6\n7,8\n"),
             Contains("t.csv:3:") && Contains("quoted field is not closed"));
  CHECK_THAT(refusal("\"a,b\n"), Contains("t.csv:1:") && Contains("not closed"));
  CHECK_THAT(refusal("a,b\n1,\"\"\"\n"), Contains("t.csv:2:") && Contains("not closed"));
}

TEST_CASE("csv: characters after a closing quote are refused", "[csv]") {
  CHECK_THAT(refusal("a,b\n1,2\n\"x\"y,3\n"),
             Contains("t.csv:3:") && Contains("after the closing quote") && Contains("'y,3"));
  CHECK_THAT(refusal("a,b\n\"multi\nline\" ,3\n"), Contains("t.csv:3:"));
}

TEST_CASE("csv: an empty file and duplicate column names are refused", "[csv]") {
  for (const std::string text : {"", "\n\n", " \r\n\t", "\xEF\xBB\xBF"}) {
    CHECK_THAT(refusal(text), Contains("t.csv: no header line"));
  }
  CHECK_THAT(refusal("\na,b,a\n1,2,3\n"),
             Contains("t.csv:2:") && Contains("duplicate column name 'a' (columns 0 and 2"));
}

TEST_CASE("csv: each limit is refused naming it and its value, at the limit it is accepted",
          "[csv]") {
  CsvLimits limits;
  limits.max_bytes = 12;
  CHECK(parse_csv("a,b\n1,2\n3,4\n", "t.csv", limits).rows.size() == 2);  // 12 bytes
  CHECK_THAT(refusal("a,b\n1,2\n3,45\n", limits), Contains("max_bytes (12)"));
  limits = {};
  limits.max_rows = 2;
  CHECK(parse_csv("a\n1\n2\n", "t.csv", limits).rows.size() == 2);
  CHECK_THAT(refusal("a\n1\n2\n\n3\n", limits),
             Contains("t.csv:5:") && Contains("more than 2 rows") && Contains("max_rows"));
  limits = {};
  limits.max_columns = 3;
  CHECK(parse_csv("a,b,c\n1,2,3\n", "t.csv", limits).rows.size() == 1);
  CHECK_THAT(refusal("a,b,c,d\n1,2,3,4\n", limits),
             Contains("t.csv:1:") && Contains("more than 3 fields") && Contains("max_columns"));
  CHECK_THAT(refusal("a,b\n1,2\n1,2,3,4,5\n", limits),
             Contains("t.csv:3:") && Contains("max_columns"));
  limits = {};
  limits.max_field_bytes = 4;
  CHECK(parse_csv("abcd\n\"ab\"\"c\"\n", "t.csv", limits).rows == Rows{{"ab\"c"}});
  for (const std::string text : {"a\nabcde\n", "a\n\"abcde\"\n", "a\n\"ab\"\"cd\"\n",
                                 "a\n\"a\nb\nc\nd\ne\"\n", "abcde\n1\n"}) {
    INFO(text);
    CHECK_THAT(refusal(text, limits), Contains("more than 4 bytes") && Contains("max_field_bytes"));
  }
  CHECK_THAT(refusal("a\n1\n\"a\nb\nc\nd\ne\"\n", limits), Contains("t.csv:3:"));
  limits = {};
  limits.max_cells = 4;
  CHECK(parse_csv("a,b\n1,2\n3,4\n", "t.csv", limits).rows.size() == 2);
  CHECK_THAT(
      refusal("a,b\n1,2\n3,4\n5,6\n", limits),
      Contains("t.csv:4:") && Contains("more than 4 fields in all rows") && Contains("max_cells"));
}

TEST_CASE("csv: a column by name, by 0-based index, or a ConfigError listing the names", "[csv]") {
  const CsvTable t = parse_csv("path,label,1\nx,y,z\n", "labels.csv");
  CHECK(ltfit::csv_column(t, "label", "k") == 1);
  CHECK(ltfit::csv_column(t, "0", "k") == 0);
  CHECK(ltfit::csv_column(t, "1", "k") == 2);  // a name wins over an index
  CHECK(ltfit::csv_column(t, "002", "k") == 2);
  const std::string missing = column_error(t, "Label");
  CHECK_THAT(missing, Contains("data.csv.path_column: no column named 'Label'") &&
                          Contains("labels.csv") && Contains("'path', 'label', '1'"));
  CHECK_THAT(column_error(t, "3"), Contains("column index '3' is out of range"));
  CHECK_THAT(column_error(t, "99999999999999999999999"), Contains("out of range"));
  CHECK_THAT(column_error(t, ""), Contains("no column named ''"));
  CHECK_THAT(column_error(t, "-1"), Contains("no column named '-1'"));
  // A hostile header is cut short in the message: 20 names of at most 60 bytes, no controls.
  std::string header;
  for (int i = 0; i < 30; ++i)
    header += (i ? "," : "") + std::string(1000, 'a') + std::to_string(i);
  const std::string long_names = column_error(parse_csv(header + "\x1b[2J\n", "h.csv"), "x");
  CHECK(long_names.size() < 2000);
  CHECK_THAT(long_names, Contains("and 10 more"));
  CHECK_THAT(column_error(parse_csv("\"\x1b]0;x\x07\"\n", "h.csv"), "x"),
             Contains("'\\x1b]0;x\\x07'"));
}

TEST_CASE("csv: read_csv_file reads a regular file within max_bytes, refuses anything else",
          "[csv]") {
  ltfit::testing::TempDir dir;
  const fs::path good = dir.path() / "labels.csv";
  ltfit::testing::write_file(good, "path,label\r\nx.jpg,cat\r\n");
  const CsvTable t = ltfit::read_csv_file(good.string());
  CHECK(t.source == good.string());
  CHECK(t.rows == Rows{{"x.jpg", "cat"}});
  const std::string missing = (dir.path() / "missing.csv").string();
  CHECK_THAT(file_error(missing), Contains(missing) && Contains("does not exist"));
  CHECK_THAT(file_error(dir.str()), Contains(dir.str()) && Contains("is a directory"));
  CHECK_THAT(file_error("/dev/zero"), Contains("a character device"));
  const fs::path fifo = dir.path() / "fifo.csv";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THAT(file_error(fifo.string()), Contains("a FIFO"));
  CsvLimits small;
  small.max_bytes = 10;
  CHECK_THAT(file_error(good.string(), small),
             Contains(good.string()) && Contains("23 bytes") && Contains("max_bytes (10)"));
  // A sparse 1 GiB file is refused from its size, before anything is read or allocated.
  const fs::path huge = dir.path() / "huge.csv";
  ltfit::testing::write_file(huge, "a,b\n");
  fs::resize_file(huge, 1ull << 30);
  CHECK_THAT(file_error(huge.string()), Contains("1073741824 bytes") && Contains("max_bytes"));
  // Parse errors name the path too.
  ltfit::testing::write_file(good, "a,b\n1\n");
  CHECK_THAT(file_error(good.string()), Contains(good.string() + ":2:"));
}

TEST_CASE("csv: random tables written with RFC 4180 quoting parse back to themselves", "[csv]") {
  std::mt19937 rng(7);
  const std::string alphabet = "ab ,\"\r\n\t\xC3\xA9";
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t columns = 2 + rng() % 4;
    Rows rows(1 + rng() % 6, std::vector<std::string>(columns));
    std::string text = rng() % 2 ? "\xEF\xBB\xBF" : "";
    const char* newline = rng() % 2 ? "\r\n" : "\n";
    for (std::size_t r = 0; r < rows.size(); ++r) {
      for (std::size_t c = 0; c < columns; ++c) {
        std::string& field = rows[r][c];
        for (std::size_t n = rng() % 7; n > 0; --n) field += alphabet[rng() % alphabet.size()];
        if (r == 0) field += std::to_string(c);  // header names are distinct
        text += (c ? "," : "") + rfc_field(field, rng() % 5 == 0);
      }
      if (r + 1 < rows.size() || rng() % 2) text += newline;
    }
    INFO(text);
    const CsvTable t = parse_csv(text, "t.csv");
    CHECK(t.header == rows[0]);
    CHECK(t.rows == Rows(rows.begin() + 1, rows.end()));
    REQUIRE(t.lines.size() == t.rows.size());
  }
}

TEST_CASE("csv: random bytes end in a well-formed table or a DataError", "[csv]") {
  std::mt19937 rng(11);
  const std::string alphabet = "a,,\"\"\r\n\n \t\xEF\xBB\xBF";
  CsvLimits limits;
  limits.max_columns = 6;
  limits.max_field_bytes = 8;
  limits.max_rows = 5;
  int accepted = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string text(rng() % 40, '\0');
    for (char& c : text) c = alphabet[rng() % alphabet.size()];
    try {
      const CsvTable t = parse_csv(text, "t.csv", limits);
      ++accepted;
      REQUIRE(t.lines.size() == t.rows.size());
      for (std::size_t i = 0; i < t.rows.size(); ++i) {
        REQUIRE(t.rows[i].size() == t.header.size());
        REQUIRE(t.lines[i] >= (i ? t.lines[i - 1] + 1 : 2));
      }
    } catch (const ltfit::DataError& e) {
      REQUIRE_THAT(e.what(), Contains("t.csv"));
    }
  }
  CHECK(accepted > 100);
}

// Writes the parse of every *.csv file in LTFIT_CSV_ORACLE_DIR next to it as NAME.ltfit.json
// ({"header", "rows", "lines"}, or {"error"}), for tests/data/csv_oracle.py to compare with
// pandas.
TEST_CASE("csv: the parse of the oracle's files, written as JSON", "[.][csv_oracle]") {
  const char* dir = std::getenv("LTFIT_CSV_ORACLE_DIR");
  REQUIRE(dir != nullptr);
  int written = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".csv") continue;
    nlohmann::json out;
    try {
      const CsvTable t = ltfit::read_csv_file(entry.path().string());
      out = {{"header", t.header}, {"rows", t.rows}, {"lines", t.lines}};
    } catch (const ltfit::DataError& e) {
      out = {{"error", e.what()}};
    }
    fs::path json_path = entry.path();
    json_path.replace_extension(".ltfit.json");
    std::ofstream(json_path) << out.dump(1) << "\n";
    ++written;
  }
  CHECK(written > 0);
}
