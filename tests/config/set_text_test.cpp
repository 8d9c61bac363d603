// `--set key=value` values that YAML reads as null although the text is not empty (issue 40,
// A3): the shell removes the quotes of --set data.csv.label_delim=' ', leaving a lone space that
// YAML reads as null; it is that text, as is '#'. The null spellings stay null.
#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include "ltfit/config/config_loader.h"
#include "ltfit/util/error.h"

using ltfit::load_config_from_string;
using ltfit::parse_override;

namespace {

std::optional<std::string> delim_after(const std::string& set) {
  return load_config_from_string("data: {csv: {label_delim: ';'}}\n", "t.yaml",
                                 {parse_override("data.csv.label_delim=" + set)})
      .data.csv.label_delim;
}

}  // namespace

TEST_CASE("set option: --set: a value of spaces or a comment sign is that text, not null",
          "[config][set]") {
  CHECK(delim_after(" ") == std::optional<std::string>(" "));
  CHECK(delim_after("  ") == std::optional<std::string>("  "));
  CHECK(delim_after("\t") == std::optional<std::string>("\t"));
  CHECK(delim_after("#") == std::optional<std::string>("#"));
  CHECK(delim_after("' '") == std::optional<std::string>(" "));  // quotes kept by the shell
  CHECK(delim_after(";") == std::optional<std::string>(";"));

  // A lone space makes the task multi-label, as the config file's label_delim: ' ' does.
  const ltfit::Config config =
      load_config_from_string("", "t.yaml", {parse_override("data.csv.label_delim= ")});
  CHECK(ltfit::is_multi_label(config));
}

TEST_CASE("set option: --set: empty and the YAML null spellings are null", "[config][set]") {
  for (const char* null_text : {"", "~", "null", "Null", "NULL", " null "}) {
    CAPTURE(null_text);
    CHECK_FALSE(delim_after(null_text).has_value());
  }
}

TEST_CASE("set option: --set: spaces for a number are refused, naming the key", "[config][set]") {
  try {
    load_config_from_string("", "t.yaml", {parse_override("data.batch_size= ")});
    FAIL("no ConfigError");
  } catch (const ltfit::ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("data.batch_size"));
  }
}
