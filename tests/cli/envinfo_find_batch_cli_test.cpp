// `ltfit envinfo` and `ltfit find-batch` end to end: exit codes, JSON documents, tables.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::run_ltfit;

TEST_CASE("envinfo and find-batch have help", "[cli][envinfo][batch_finder]") {
  for (const char* cmd : {"envinfo --help", "find-batch --help"}) {
    INFO(cmd);
    const auto r = run_ltfit(cmd);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.stdout_text, Contains("Usage"));
  }
  CHECK_THAT(run_ltfit("find-batch --help").stdout_text, Contains("estimate"));
  CHECK(run_ltfit("find-batch").exit_code == 2);  // --config is required
}

TEST_CASE("envinfo prints every field as JSON and as a table", "[cli][envinfo]") {
  ltfit::testing::TempDir dir;
  const auto r = run_ltfit("envinfo --json --data " + dir.str());
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.stdout_text);
  CHECK(j["data_disk"]["path"] == dir.str());
  CHECK(j["data_disk"]["total_bytes"].is_number());
  CHECK(j["run_disk"]["path"] == "none");
  CHECK(j["cpu"]["logical_threads"].get<int>() >= 1);
  CHECK(j["memory"]["total_bytes"].get<std::int64_t>() > 0);
  CHECK(j["gpus"].is_array());
  CHECK(j.contains("container"));

  const auto table = run_ltfit("envinfo");
  REQUIRE(table.exit_code == 0);
  CHECK_THAT(table.stdout_text, Contains("CPU") && Contains("RAM") && Contains("/dev/shm") &&
                                    Contains("LibTorch") && Contains("container"));
}

TEST_CASE("find-batch finds the --max batch for a tiny CPU config", "[cli][batch_finder]") {
  ltfit::testing::TempDir dir;
  const fs::path config = dir.path() / "tiny.yaml";
  ltfit::testing::write_file(config, "data: {root: " + (dir.path() / "data").string() +
                                         ", image_size: 64, batch_size: 8}\n"
                                         "model: {arch: resnet18, pretrained: none, head: linear}\n"
                                         "train: {device: cpu}\n");
  const auto r = run_ltfit("find-batch --config " + config.string() +
                           " --set data.image_size=32 --max 8 --json");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.stdout_text);
  CHECK(j["largest_batch"] == 8);
  CHECK(j["image_size"] == 32);
  CHECK(j["max"] == 8);
  CHECK(j["memory_is_estimate"] == true);
  REQUIRE(j["trials"].size() == 3);  // 2, 4, 8
  CHECK(j["trials"][2]["batch"] == 8);
  CHECK(j["trials"][2]["fits"] == true);
  CHECK(j["start"] == 2);
  CHECK_THAT(j["study_context"].get<std::string>(), Contains("11.17 GiB K80"));
  CHECK_THAT(r.output, Contains("batch     8: fits"));  // progress per trial on stderr

  const auto text = run_ltfit("find-batch --config " + config.string() + " --max 2");
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.stdout_text, Contains("largest batch that trains: 2") && Contains("K80"));
  CHECK(run_ltfit("find-batch --config " + config.string() + " --start 1").exit_code == 2);
}
