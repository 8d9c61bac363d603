// run_lr_find_job: the sweep on the training setup, its CSV and chart, and where they go.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>

#include "jobs/jobs_fixtures.h"
#include "ltfit/config/config_loader.h"
#include "ltfit/jobs/lr_find_job.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace {

namespace fs = std::filesystem;
using ltfit::testing::TempDir;

int count_lines(const fs::path& file) {
  std::istringstream in(ltfit::testing::read_file(file));
  int lines = 0;
  for (std::string line; std::getline(in, line);) ++lines;
  return lines;
}

}  // namespace

TEST_CASE("lr_find_job writes lr_find.csv and lr_find.png, in --out or <name>-lr_find",
          "[jobs][lr_find]") {
  TempDir dir;
  ltfit::testing::write_small_synth(dir.path() / "data", 16, 4, 40, 60, /*seed=*/6);
  const ltfit::Config config = ltfit::load_config_from_string(
      ltfit::testing::tiny_job_config(dir.path() / "data", dir.path() / "runs"), "test config");
  ltfit::LrFindJobOptions options;
  options.steps = 6;
  const bool explicit_out = GENERATE(true, false);
  INFO("--out given: " << explicit_out);
  const fs::path expected_dir =
      explicit_out ? dir.path() / "sweep/nested" : dir.path() / "runs/tiny-lr_find";
  if (explicit_out) options.out = expected_dir.string();

  const ltfit::LrFindJobResult result = ltfit::run_lr_find_job(config, options);
  CHECK(fs::equivalent(result.dir, expected_dir));
  CHECK(result.sweep.lrs.size() <= 6);
  CHECK_FALSE(result.sweep.lrs.empty());
  REQUIRE(fs::exists(expected_dir / "lr_find.csv"));
  CHECK(ltfit::testing::read_file(expected_dir / "lr_find.csv")
            .rfind("step,lr,loss,smoothed_loss\n", 0) == 0);
  CHECK(count_lines(expected_dir / "lr_find.csv") == static_cast<int>(result.sweep.lrs.size()) + 1);
  CHECK(fs::file_size(expected_dir / "lr_find.png") > 0);
}

TEST_CASE("lr_find_job: an --out that cannot be created is exit 5 before the data is read",
          "[jobs][lr_find]") {
  TempDir dir;
  ltfit::testing::write_file(dir.path() / "file", "in the way");
  // The data root does not exist either: the output folder is checked first.
  const ltfit::Config config = ltfit::load_config_from_string(
      ltfit::testing::tiny_job_config(dir.path() / "no-data", dir.path() / "runs"), "test config");
  ltfit::LrFindJobOptions options;
  options.out = (dir.path() / "file/sub").string();
  CHECK_THROWS_AS(ltfit::run_lr_find_job(config, options), ltfit::RuntimeError);
  options.out = (dir.path() / "ok").string();
  CHECK_THROWS_AS(ltfit::run_lr_find_job(config, options), ltfit::DataError);
}
