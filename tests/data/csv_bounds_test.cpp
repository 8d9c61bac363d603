// The CSV reader's memory and stops (issue 40, A8): a dataset keeps only the columns it uses, a
// few bytes a field beyond their text, so a file of 4,096 empty columns costs little; a table
// whose memory would pass CsvLimits::max_memory is refused with the file, the line and the limit
// (DataError, exit 3); a stop request ends reading and indexing within a fraction of a second
// (InterruptedError, exit 130), and a flag left from an earlier request does not.
#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <string>
#include <vector>

#include "data/index_test_support.h"
#include "ltfit/data/csv_table.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/util/error.h"
#include "ltfit/util/signals.h"
#include "support/test_support.h"

using Catch::Contains;
using ltfit::CsvLimits;
using ltfit::CsvTable;
using ltfit::testing::TempDir;

namespace {

// A header `path,label,c2,...` of `columns` names, then `rows` rows "i.jpg,cat,,,...".
std::string wide_csv(std::size_t columns, std::size_t rows) {
  std::string text = "path,label";
  for (std::size_t c = 2; c < columns; ++c) text += ",c" + std::to_string(c);
  text += "\n";
  const std::string rest(columns - 2, ',');
  for (std::size_t r = 0; r < rows; ++r) text += std::to_string(r) + ".jpg,cat" + rest + "\n";
  return text;
}

std::vector<std::size_t> path_and_label(const CsvTable& head) {
  return {ltfit::csv_column(head, "label", "data.csv.label_column"),
          ltfit::csv_column(head, "path", "data.csv.path_column")};
}

// What the table holds (its buffers are reserved ahead, but pages are taken only when written).
std::uint64_t stored_bytes(const ltfit::CsvColumns& t) {
  return t.text.size() + 4 * (t.ends.size() + t.lines.size());
}

}  // namespace

TEST_CASE("csv columns: only the picked columns are kept, compactly, with lines and checks",
          "[data][csv][bounds]") {
  const auto t = ltfit::parse_csv_columns("a,path,label\n1,x.jpg,cat\n\n2,\"y\n.jpg\",dog\n",
                                          "t.csv", path_and_label);
  CHECK(t.header == std::vector<std::string>{"a", "path", "label"});
  CHECK(t.columns == std::vector<std::size_t>{2, 1});
  REQUIRE(t.rows() == 2);
  CHECK(t.cell(0, 0) == "cat");
  CHECK(t.cell(0, 1) == "x.jpg");
  CHECK(t.cell(1, 0) == "dog");
  CHECK(t.cell(1, 1) == "y\n.jpg");
  CHECK(t.line(0) == 2);
  CHECK(t.line(1) == 4);
  // The same refusals as parse_csv: a ragged row names the file and line.
  CHECK_THROWS_WITH(ltfit::parse_csv_columns("path,label\nx\n", "t.csv", path_and_label),
                    Contains("t.csv:2") && Contains("a row of 1 field"));
  // A pick naming a column the file lacks is the pick's error (a ConfigError naming the key).
  CHECK_THROWS_AS(ltfit::parse_csv_columns("a,b\n1,2\n", "t.csv", path_and_label),
                  ltfit::ConfigError);
}

TEST_CASE("csv columns: 4,096 empty columns cost the two kept ones, not 40 bytes a field",
          "[data][csv][bounds]") {
  const std::string text = wide_csv(4096, 2000);  // 8 MB, 8 M fields
  const auto t = ltfit::parse_csv_columns(text, "wide.csv", path_and_label);
  REQUIRE(t.rows() == 2000);
  CHECK(t.cell(1999, 1) == "1999.jpg");
  CHECK(stored_bytes(t) < 200'000);  // ~ 2000 rows x (12 bytes of text + 12 of offsets)

  // The whole table of strings would take ~270 MB: with a bound of 64 MiB, it is refused with
  // the file, the line reached and the limit, before the memory is taken.
  CsvLimits limits;
  limits.max_memory = 64ull << 20;
  CHECK_THROWS_WITH(ltfit::parse_csv(text, "wide.csv", limits),
                    Contains("wide.csv:") && Contains("max_memory") && Contains("67108864"));
  try {
    ltfit::parse_csv(text, "wide.csv", limits);
  } catch (const ltfit::Error& e) {
    CHECK(e.exit_code() == ltfit::ExitCode::kData);
  }
  // The compact table of the same file is far within it.
  CHECK(ltfit::parse_csv_columns(text, "wide.csv", path_and_label, limits).rows() == 2000);
}

TEST_CASE("csv columns: the compact table is bounded by max_memory too", "[data][csv][bounds]") {
  std::string text = "path,label\n";
  for (int r = 0; r < 100'000; ++r) text += "p,l\n";
  CsvLimits limits;
  limits.max_memory = 1 << 20;  // 100,000 rows x 10 bytes > 1 MiB
  CHECK_THROWS_WITH(ltfit::parse_csv_columns(text, "long.csv", path_and_label, limits),
                    Contains("long.csv:") && Contains("max_memory"));
}

TEST_CASE("csv: a stop request ends reading within a fraction of a second (exit 130)",
          "[data][csv][bounds][stop]") {
  const std::string text = wide_csv(3, 300'000);
  {
    ltfit::StopSignals signals;
    std::raise(SIGINT);  // only sets the flag under kFinishWork
    const auto start = std::chrono::steady_clock::now();
    try {
      ltfit::parse_csv_columns(text, "big.csv", path_and_label);
      FAIL("not stopped");
    } catch (const ltfit::InterruptedError& e) {
      CHECK(e.exit_code() == ltfit::ExitCode::kInterrupted);
      CHECK_THAT(e.what(), Contains("big.csv"));
    }
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(500));
  }
  // The flag left from that request, with no StopSignals alive, stops nothing.
  CHECK(ltfit::parse_csv_columns(text, "big.csv", path_and_label).rows() == 300'000);
  ltfit::StopSignals::reset();
}

TEST_CASE("csv layout: a stop request ends indexing the rows (exit 130)",
          "[data][index][bounds][stop]") {
  TempDir dir;
  std::string text = "fname,labels\n";
  for (int r = 0; r < 2000; ++r) text += "img" + std::to_string(r) + ".jpg,cat\n";
  ltfit::testing::write_file(dir.path() / "labels.csv", text);
  ltfit::DataConfig data = ltfit::testing::index_data_config(dir, "csv");
  ltfit::StopSignals signals;
  std::raise(SIGINT);
  CHECK_THROWS_AS(ltfit::index_dataset(data, 0, false), ltfit::InterruptedError);
  ltfit::StopSignals::reset();
}
