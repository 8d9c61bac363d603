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
  // The 2019 K80 figure is context for the study's own setting only (ResNet-34, 224 px, fp32).
  CHECK(j["study_context"].is_null());
  CHECK(j["classes"] == 2);  // no data.root: a 2-class head, said so in the log
  CHECK_THAT(r.output, Contains("data.root") && Contains("2-class head"));
  CHECK_THAT(r.output, Contains("batch     8: fits"));  // progress per trial on stderr

  const auto text = run_ltfit("find-batch --config " + config.string() + " --max 2");
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.stdout_text, Contains("largest batch that trains: 2") && !Contains("K80"));
  CHECK(run_ltfit("find-batch --config " + config.string() + " --start 1").exit_code == 2);
}

TEST_CASE("find-batch builds the head for the dataset's classes", "[cli][batch_finder]") {
  ltfit::testing::TempDir dir;
  const fs::path data = dir.path() / "data";
  ltfit::testing::write_small_synth(data, 4, 2, 40, 48);
  for (const char* split : {"train", "valid"}) {  // a third class, from the dog images
    fs::create_directories(data / split / "fox");
    for (const auto& e : fs::directory_iterator(data / split / "dog"))
      fs::copy_file(e.path(), data / split / "fox" / e.path().filename());
  }
  const fs::path config = dir.path() / "three.yaml";
  ltfit::testing::write_file(config, "data: {root: " + data.string() +
                                         ", image_size: 32, batch_size: 8}\n"
                                         "model: {arch: resnet18, pretrained: none}\n"
                                         "train: {device: cpu}\n");
  const auto r = run_ltfit("find-batch --config " + config.string() + " --max 2 --json");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.stdout_text);
  CHECK(j["classes"] == 3);
  CHECK_THAT(r.output, Contains("for 3 classes") && !Contains("for 2 classes"));
}
