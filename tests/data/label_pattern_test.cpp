// data.label_pattern matched in bounded time (issue 40, A8): RE2 is linear in the name, so a
// pattern that makes a backtracking engine run for ever (^((a|aa)+|[a-z]+)_\d+\.jpg$ on a name of
// 50 a's, which std::regex never finished) returns at once; RE2's syntax keeps the patterns of
// docs/labels.md working (classes, non-greedy, named groups) and refuses what it lacks
// (backreferences) as a config error naming the key.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>

#include "data/index_test_support.h"
#include "ltfit/config/config_loader.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/util/error.h"
#include "ltfit/util/name_pattern.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Contains;
using ltfit::NamePattern;
using ltfit::testing::TempDir;
using ltfit::testing::touch_index_file;

namespace {

std::string first_group(const std::string& pattern, const std::string& name) {
  const NamePattern regex(pattern);
  REQUIRE(regex.ok());
  std::string group;
  return regex.full_match(name, group) ? group : "(no match)";
}

}  // namespace

TEST_CASE("label pattern: a backtracking pattern on 50 a's returns within a second",
          "[data][pattern]") {
  TempDir dir;
  const std::string fifty(50, 'a');
  touch_index_file(dir.path() / (fifty + "x.jpg"));  // fails late: the worst case
  touch_index_file(dir.path() / (fifty + "_1.jpg"));
  touch_index_file(dir.path() / "bb_2.jpg");
  ltfit::DataConfig data = ltfit::testing::index_data_config(dir, "pattern");
  data.label_pattern = R"(^((a|aa)+|[a-z]+)_\d+\.jpg$)";
  data.valid_pct = 0.5;
  const auto start = std::chrono::steady_clock::now();
  const auto index = ltfit::index_dataset(data, 0, false);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
  CHECK(index.classes == std::vector<std::string>{fifty, "bb"});
  CHECK(index.train.size() + index.valid.size() == 2);
  CHECK_THAT(index.notes.at(0), Contains("1 image file(s) whose name does not match"));
}

TEST_CASE("label pattern: RE2 syntax matches the documented patterns byte for byte",
          "[data][pattern]") {
  CHECK(first_group(R"(^(.+)_\d+\.jpg$)", "great_pyrenees_17.jpg") == "great_pyrenees");
  CHECK(first_group(R"(^([A-Za-z]+)[_-]\d+\.(?:jpg|jpeg|png)$)", "Cat-3.png") == "Cat");
  CHECK(first_group(R"(^(.*?)_(\d+)\.(jpg|png)$)", "a_b_12.jpg") == "a_b");
  CHECK(first_group(R"(^(?P<breed>.+)_\d+\.jpg$)", "pug_1.jpg") == "pug");
  CHECK(first_group(R"((.+)\.jpg)", "x.jpg.bak") == "(no match)");  // the whole name must match
  CHECK(first_group(R"(^(.+)_\d+\.jpg$)", "caf\xC3\xA9_1.jpg") == "caf\xC3\xA9");
  CHECK(first_group(R"(^(.)_\d+\.jpg$)", "\xFF_1.jpg") == "\xFF");  // any byte, as std::regex
  CHECK(first_group(R"(^(x)?y_1\.jpg$|^(z)_1\.jpg$)", "z_1.jpg").empty());  // group 1 unused
}

TEST_CASE("label pattern: what RE2 cannot match is a config error naming the key",
          "[data][pattern][config]") {
  for (const char* bad : {R"(^(a)\1_\d+\.jpg$)", R"(^(?=a)(.+)\.jpg$)", "(unclosed"}) {
    CAPTURE(bad);
    CHECK_FALSE(NamePattern(bad).ok());
    CHECK_THROWS_WITH(ltfit::load_config_from_string(
                          "data: {root: d, label_pattern: '" + std::string(bad) + "'}\n", "x"),
                      Contains("data.label_pattern") && Contains("RE2"));
  }
  CHECK(NamePattern(R"(^.+\.jpg$)").groups() == 0);
  CHECK(NamePattern(R"(^(.+)_(\d+)\.jpg$)").groups() == 2);
}
