// run_lr_find_job: the sweep on the training setup, its CSV and chart, and where they go.
#include <spdlog/fmt/fmt.h>
#include <catch2/catch.hpp>

#include <opencv2/imgcodecs.hpp>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "jobs/jobs_fixtures.h"
#include "ltfit/config/config_loader.h"
#include "ltfit/jobs/lr_find_job.h"
#include "ltfit/util/error.h"
#include "support/chart_pixels.h"
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

// A sweep as lr_find records it, without training: 100 LRs from 1e-7 to 10, a smoothed loss
// that falls around 1e-4 and rises after 1e-1, and fastai's two suggestions.
ltfit::LrFindResult fabricated_sweep() {
  ltfit::LrFindResult r;
  for (int i = 0; i < 100; ++i) {
    const double lr = 1e-7 * std::pow(1e8, i / 100.0), e = std::log10(lr);
    r.lrs.push_back(lr);
    r.losses.push_back(0.0);
    r.smoothed.push_back(2.0 - 1.2 / (1.0 + std::exp(-3.0 * (e + 4.0))) + std::exp(2.0 * e));
  }
  r.steepest = ltfit::suggest_steepest(r.lrs, r.smoothed);
  r.valley = ltfit::suggest_valley(r.lrs, r.smoothed);
  return r;
}

}  // namespace

TEST_CASE("lr_find.png ticks decades once each and names both suggestions with their values",
          "[jobs][lr_find][plot]") {
  const ltfit::LrFindResult sweep = fabricated_sweep();
  REQUIRE(sweep.valley);
  REQUIRE(sweep.steepest);
  REQUIRE(*sweep.valley != *sweep.steepest);
  const ltfit::LineChart chart = ltfit::lr_find_chart(sweep);
  CHECK(chart.x.size() == 85);  // fastai's Recorder.plot range: without 10 first, 5 last
  REQUIRE(chart.options.markers.size() == 2);
  CHECK(chart.options.markers[0].label == fmt::format("valley: {:.3g}", *sweep.valley));
  CHECK(chart.options.markers[1].label == fmt::format("steepest: {:.3g}", *sweep.steepest));
  const ltfit::ChartLayout layout = ltfit::line_chart_layout(chart.x, chart.series, chart.options);
  // The old chart: 1e-4, 1e-3, 1e-2, 1e-2, 1e-1 at quarter spans of the range.
  CHECK(ltfit::testing::tick_labels(layout.x_ticks) ==
        std::vector<std::string>{"1e-6", "1e-5", "1e-4", "0.001", "0.01", "0.1", "1"});
  CHECK_FALSE(layout.legend.overlaps(layout.plot));
  REQUIRE(layout.marks.size() == 3);  // the curve, the valley, the steepest point

  TempDir dir;
  const std::string path = (dir.path() / "lr_find.png").string();
  ltfit::write_line_chart(path, chart.x, chart.series, chart.options);
  const cv::Mat img = cv::imread(path, cv::IMREAD_COLOR);
  REQUIRE(img.cols == layout.width);
  for (const auto& mark : layout.marks) {
    INFO(mark.label);
    CHECK(layout.plot.contains(mark.extent));
    CHECK(ltfit::testing::count_color(img, mark.color, mark.extent) > 50);
    CHECK(ltfit::testing::count_color(img, mark.color, layout.legend) > 10);
  }
  CHECK(layout.marks[1].color != layout.marks[2].color);
  CHECK(layout.marks[1].color != layout.marks[0].color);
}

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
