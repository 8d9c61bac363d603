// The report's charts on fabricated rows: total_time.png has a group for every run (the bf16
// and channels_last rows too), this machine's bars are visible and labelled like the study's
// times however short the run, the y ticks are nice; curves.png ticks whole steps, keeps its
// legend off the lines and shows every run's line, even one identical to another.
#include <catch2/catch.hpp>

#include <opencv2/imgcodecs.hpp>

#include <filesystem>

#include "ltfit/study/experiment_charts.h"
#include "support/chart_pixels.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using ltfit::ChartMark;
using ltfit::ExperimentRow;
using ltfit::RunStatus;
using ltfit::testing::count_color;
using ltfit::testing::tick_labels;
using Labels = std::vector<std::string>;

namespace {

ltfit::ExperimentPlan two_platform_plan() {
  ltfit::ExperimentPlan plan;
  plan.study.source = "study.yaml";
  plan.study.platforms = {{"kaggle", "Kaggle P100", "", "", ""},
                          {"colab", "Colab K80", "", "", ""}};
  plan.study.runs = {{"s1", "s1", {{677.0, "11:17"}, {1194.0, "19:54"}}},
                     {"s2", "s2", {{767.0, "12:47 (slower than fp32)"}, {997.0, "16:37"}}}};
  return plan;
}

ExperimentRow row(const std::string& label, const std::string& study_run, RunStatus status,
                  std::optional<double> total_seconds, const std::string& run_dir = "") {
  ExperimentRow r;
  r.outcome.label = label;
  r.outcome.study_run = study_run;
  r.outcome.status = status;
  r.outcome.run_dir = run_dir;
  r.total_seconds = total_seconds;
  return r;
}

// The rows of a CPU run of the study's plan: seconds where the study took minutes.
std::vector<ExperimentRow> cpu_rows() {
  return {row("3 epochs, bs 16, fp32", "s1", RunStatus::kOk, 2.0),
          row("3 epochs, bs 16, fp16 (mixed)", "s2", RunStatus::kNotApplicable, std::nullopt),
          row("3 epochs, bs 16, bf16 (mixed)", "", RunStatus::kOk, 105.0),
          row("3 epochs, bs 16, fp32, channels_last off", "", RunStatus::kOk, 0.4)};
}

void write_steps(const fs::path& dir, int steps, double phase) {
  std::string csv = "step,epoch,lr_0,lr_1,momentum,loss,loss_scale\n";
  for (int i = 0; i < steps; ++i) {
    csv += std::to_string(i) + ",0,0.0001," + std::to_string(0.003 * std::sin(i / 5.0 + phase)) +
           ",0.9," + std::to_string(1.5 + std::cos(i + phase)) + ",1\n";
  }
  ltfit::testing::write_file(dir / "steps.csv", csv);
}

}  // namespace

TEST_CASE("total_time.png: every run has its group, this machine's bars are seen and never 0",
          "[experiment][plot]") {
  ltfit::testing::TempDir dir;
  const auto plan = two_platform_plan();
  const auto rows = cpu_rows();
  const ltfit::BarChart chart = ltfit::total_time_chart(plan, rows);
  CHECK(chart.groups == Labels{"3 epochs, bs 16, fp32", "3 epochs, bs 16, fp16 (mixed)",
                               "3 epochs, bs 16, bf16 (mixed)",
                               "3 epochs, bs 16, fp32, channels_last off"});
  REQUIRE(chart.series.size() == 3);
  CHECK(chart.series[0].notes[1] == "n/a");

  const ltfit::ChartLayout layout =
      ltfit::bar_chart_layout(chart.groups, chart.series, chart.options);
  CHECK(tick_labels(layout.y_ticks) == Labels{"0", "5", "10", "15", "20", "25"});  // minutes
  CHECK_FALSE(layout.legend.overlaps(layout.plot));
  std::vector<std::string> ours;
  for (const auto& bar : layout.marks)
    if (bar.index == 0) ours.push_back(bar.value_label);
  CHECK(ours == Labels{"2.0 s", "01:45", "0.4 s"});

  ltfit::write_experiment_charts(dir.str(), plan, rows);
  const cv::Mat img = cv::imread((dir.path() / "total_time.png").string(), cv::IMREAD_COLOR);
  REQUIRE(img.cols == layout.width);
  REQUIRE(img.rows == layout.height);
  for (const auto& bar : layout.marks) {
    INFO(bar.label << " in group " << bar.group << ": " << bar.value_label);
    CHECK(bar.extent.height() >= 4);
    CHECK(layout.plot.contains(bar.extent));
    CHECK(count_color(img, bar.color, bar.extent) >= 4 * (bar.extent.width() - 2));
  }
  CHECK(ltfit::minutes_label(11 + 17 / 60.0) == "11:17");
  CHECK(ltfit::minutes_label(0.01 / 60.0) == "0.01 s");
}

TEST_CASE("total_time.png of a plan beside no study: no study in the title or legend, seconds",
          "[experiment][plot]") {
  ltfit::ExperimentPlan plan = two_platform_plan();  // platforms listed, but no row is theirs
  const std::vector<ExperimentRow> rows = {row("bs 8", "", RunStatus::kOk, 5.0),
                                           row("bs 16", "", RunStatus::kOk, 3.5)};
  const ltfit::BarChart chart = ltfit::total_time_chart(plan, rows);
  REQUIRE(chart.series.size() == 1);  // no empty platform series in the legend
  CHECK(chart.options.title.find("study") == std::string::npos);
  CHECK(chart.options.y_label == "seconds");
  const ltfit::ChartLayout layout =
      ltfit::bar_chart_layout(chart.groups, chart.series, chart.options);
  CHECK(tick_labels(layout.y_ticks) == Labels{"0", "1", "2", "3", "4", "5", "6"});  // seconds
  std::vector<std::string> labels;
  for (const auto& bar : layout.marks) labels.push_back(bar.value_label);
  CHECK(labels == Labels{"5.0 s", "3.5 s"});
  // Beside the study's figures, minutes as before.
  const auto with_study = ltfit::total_time_chart(plan, cpu_rows());
  CHECK(with_study.options.y_label == "minutes");
  CHECK(with_study.series.size() == 3);
}

TEST_CASE("curves.png: whole step ticks, the legend off the lines, identical runs both seen",
          "[experiment][plot]") {
  ltfit::testing::TempDir dir;
  write_steps(dir.path() / "a", 17, 0.0);
  write_steps(dir.path() / "b", 17, 0.0);  // the same curve as a
  write_steps(dir.path() / "c", 9, 1.0);
  const std::vector<ExperimentRow> rows = {
      row("run a", "s1", RunStatus::kOk, 60.0, (dir.path() / "a").string()),
      row("run b", "", RunStatus::kOk, 60.0, (dir.path() / "b").string()),
      row("run c", "", RunStatus::kOk, 30.0, (dir.path() / "c").string()),
      row("not run", "", RunStatus::kNotApplicable, std::nullopt, (dir.path() / "a").string())};
  const auto charts = ltfit::curves_charts(rows);
  REQUIRE(charts.size() == 2);
  ltfit::write_experiment_charts(dir.str(), two_platform_plan(), rows);
  const cv::Mat img = cv::imread((dir.path() / "curves.png").string(), cv::IMREAD_COLOR);
  REQUIRE_FALSE(img.empty());
  int dy = 0;  // the panels are stacked
  for (const auto& chart : charts) {
    const auto layout = ltfit::line_chart_layout(chart.x, chart.series, chart.options);
    INFO(chart.options.title);
    CHECK(tick_labels(layout.x_ticks) == Labels{"0", "5", "10", "15", "20"});
    CHECK_FALSE(layout.legend.overlaps(layout.plot));
    REQUIRE(layout.marks.size() == 3);
    for (const auto& line : layout.marks) {
      INFO(line.label);
      CHECK(layout.plot.contains(line.extent));
      CHECK(count_color(img, line.color, line.extent, dy) > 40);
    }
    dy += layout.height;
  }
  CHECK(dy == img.rows);
}
