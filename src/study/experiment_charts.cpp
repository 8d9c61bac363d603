// The experiment's charts (experiment_charts.h, experiment_report.h): total_time.png, grouped
// bars per run (this machine, measured or estimated, beside each platform of the study, in
// minutes), and curves.png, training loss and LR per step of every run that wrote steps.csv.
#include "ltfit/study/experiment_charts.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ltfit/util/format.h"

namespace ltfit {
namespace {

namespace fs = std::filesystem;

// The first word of a study note ("crashed: ..." -> "crashed"), for a missing bar.
std::string short_note(const std::string& text) {
  const std::string word = text.substr(0, text.find_first_of(" :("));
  return word.empty() ? text.substr(0, 8) : word;
}

// This machine's bar of a row: measured, or the full-size estimate in a rehearsal; a missing
// one says why (a run that finished without a time: "no time").
void add_our_bar(const ExperimentRow& r, BarSeries& ours) {
  const auto seconds = r.subset < 1.0 ? r.estimated_total_seconds() : r.total_seconds;
  ours.values.push_back(seconds ? std::optional<double>(*seconds / 60.0) : std::nullopt);
  ours.hatched.push_back(r.subset < 1.0);
  ours.notes.push_back(r.outcome.status == RunStatus::kOk ? "no time"
                                                          : run_status_name(r.outcome.status));
}

// The longest bar of `series`, in its unit (0 when it has none).
double longest(const BarSeries& series) {
  double most = 0.0;
  for (const auto& v : series.values) most = std::max(most, v.value_or(0.0));
  return most;
}

// Runs of seconds, without the study's minutes beside them, read best in seconds.
void in_seconds(BarChart& chart) {
  for (BarSeries& series : chart.series) {
    for (auto& v : series.values) {
      if (v) *v *= 60.0;
    }
  }
  chart.options.y_label = "seconds";
  chart.options.value_text = [](double seconds) { return minutes_label(seconds / 60.0); };
}

}  // namespace

std::string minutes_label(double minutes) {
  const double seconds = minutes * 60.0;
  if (seconds >= 59.5) return format_mm_ss(seconds);
  if (seconds >= 0.95) return fmt::format("{:.1f} s", seconds);
  return fmt::format("{:.2g} s", seconds);
}

// Every row, in the plan's order: the study's runs and those beyond it (bf16, channels_last).
BarChart total_time_chart(const ExperimentPlan& plan, const std::vector<ExperimentRow>& rows) {
  BarChart chart;
  BarSeries ours{"this machine", {}, {}, {}};
  std::vector<BarSeries> platforms;
  for (const auto& p : plan.study.platforms) platforms.push_back(BarSeries{p.name, {}, {}, {}});
  for (const ExperimentRow& r : rows) {
    chart.groups.push_back(r.outcome.label);
    add_our_bar(r, ours);
    const StudyRun* study = plan.study.find(r.outcome.study_run);
    for (std::size_t p = 0; p < platforms.size(); ++p) {
      const StudyTime t = study ? study->times[p] : StudyTime{};
      platforms[p].values.push_back(t.seconds ? std::optional<double>(*t.seconds / 60.0)
                                              : std::nullopt);
      platforms[p].notes.push_back(short_note(t.text));
    }
  }
  chart.series = {ours};
  // A platform none of whose runs is in the plan would be an empty legend entry.
  for (const BarSeries& platform : platforms) {
    if (std::any_of(platform.values.begin(), platform.values.end(),
                    [](const std::optional<double>& v) { return v.has_value(); }))
      chart.series.push_back(platform);
  }
  const bool beside_study = chart.series.size() > 1;
  chart.options.title = beside_study ? "Train + TTA wall time: this machine vs the study"
                                     : "Train + TTA wall time per run, this machine";
  chart.options.hatched_label = "this machine, estimate";
  chart.options.value_text = minutes_label;
  chart.options.y_label = "minutes";
  if (!beside_study && longest(ours) < 2.0) in_seconds(chart);
  return chart;
}

namespace {

// steps.csv's loss and last LR column (the head's group), one value per step.
struct StepCurves {
  std::vector<double> loss, lr;
};

StepCurves read_steps(const fs::path& path) {
  StepCurves curves;
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return curves;
  std::vector<std::string> header;
  std::stringstream h(line);
  for (std::string cell; std::getline(h, cell, ',');) header.push_back(cell);
  std::size_t loss = header.size(), lr = header.size();
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i] == "loss") loss = i;
    if (header[i].rfind("lr_", 0) == 0) lr = i;
  }
  while (std::getline(in, line)) {
    std::vector<double> cells;
    std::stringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) {
      char* end = nullptr;
      const double v = std::strtod(cell.c_str(), &end);
      cells.push_back(end != cell.c_str() ? v : NAN);
    }
    if (loss >= cells.size() || lr >= cells.size()) continue;
    curves.loss.push_back(cells[loss]);
    curves.lr.push_back(cells[lr]);
  }
  return curves;
}

}  // namespace

std::vector<LineChart> curves_charts(const std::vector<ExperimentRow>& rows) {
  LineChart loss, lr;
  std::size_t steps = 0;
  for (const auto& r : rows) {
    if (r.outcome.status == RunStatus::kNotApplicable) continue;
    const StepCurves c = read_steps(fs::path(r.outcome.run_dir) / "steps.csv");
    if (c.loss.empty()) continue;
    loss.series.push_back({r.outcome.label, c.loss});
    lr.series.push_back({r.outcome.label, c.lr});
    steps = std::max(steps, c.loss.size());
  }
  if (steps == 0) return {};  // no run trained: nothing to plot
  for (std::size_t i = 0; i < steps; ++i) loss.x.push_back(static_cast<double>(i));
  lr.x = loss.x;
  for (auto* chart : {&loss, &lr}) {  // shorter runs end early: pad with gaps
    for (auto& s : chart->series) s.y.resize(steps, NAN);
    chart->options.x_label = "optimizer step";
    chart->options.integer_x = true;
    chart->options.width = 1200;
    chart->options.height = 420;
  }
  loss.options.title = "Training loss per step";
  loss.options.y_label = "loss";
  lr.options.title = "Learning rate per step (head group)";
  lr.options.y_label = "LR";
  return {loss, lr};
}

void write_experiment_charts(const std::string& out_dir, const ExperimentPlan& plan,
                             const std::vector<ExperimentRow>& rows) {
  if (rows.empty()) return;
  const BarChart bars = total_time_chart(plan, rows);
  write_bar_chart((fs::path(out_dir) / "total_time.png").string(), bars.groups, bars.series,
                  bars.options);
  const auto curves = curves_charts(rows);
  if (!curves.empty()) write_line_charts((fs::path(out_dir) / "curves.png").string(), curves);
}

}  // namespace ltfit
