// `ltfit lr-find` run twice on the same config sweeps the same losses and suggests the same
// learning rates (the head is drawn from run.seed, as in training), and says whether the body
// was frozen for the sweep.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::run_ltfit;

TEST_CASE("lr-find: the same config gives the same sweep, and the log says what was frozen",
          "[cli][lr_find]") {
  ltfit::testing::TempDir dir;
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/data --train 48 --valid 8 --seed 2").exit_code ==
          0);
  const fs::path config = dir.path() / "c.yaml";
  ltfit::testing::write_file(config, "run: {name: lr, out_dir: " + dir.str() +
                                         "/runs, seed: 7}\ndata: {root: " + dir.str() +
                                         "/data, image_size: 32, batch_size: 8, workers: 1}\n" +
                                         "model: {arch: resnet18, pretrained: none}\n" +
                                         "train: {recipe: fine_tune, device: cpu}\n");
  std::vector<nlohmann::json> results;
  for (const char* out : {"a", "b"}) {
    const auto r = run_ltfit("lr-find --json --steps 30 --config " + config.string() + " --out " +
                             dir.str() + "/" + out);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, Contains("body frozen, as the recipe's first stage trains"));
    results.push_back(nlohmann::json::parse(r.stdout_text));
  }
  CHECK(results[0]["frozen"] == true);
  CHECK(results[0]["valley"].is_number());
  CHECK(results[0]["valley"] == results[1]["valley"]);
  CHECK(results[0]["steepest"] == results[1]["steepest"]);
  CHECK(ltfit::testing::read_file(dir.path() / "a/lr_find.csv") ==
        ltfit::testing::read_file(dir.path() / "b/lr_find.csv"));
}
