// The experiment's charts (experiment_report.h): total_time.png, grouped bars per study run
// (this machine, measured or estimated, beside each platform of the study, in minutes), and
// curves.png, training loss and LR per step of every run that wrote steps.csv.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ltfit/data/plot.h"
#include "ltfit/study/experiment_report.h"

namespace ltfit {
namespace {

namespace fs = std::filesystem;

// The first word of a study note ("crashed: ..." -> "crashed"), for a missing bar.
std::string short_note(const std::string& text) {
  const std::string word = text.substr(0, text.find_first_of(" :("));
  return word.empty() ? text.substr(0, 8) : word;
}

// Rows to chart: those reproducing a study run; all rows when none does.
std::vector<const ExperimentRow*> bar_rows(const std::vector<ExperimentRow>& rows) {
  std::vector<const ExperimentRow*> picked;
  for (const auto& r : rows)
    if (!r.outcome.study_run.empty()) picked.push_back(&r);
  if (picked.empty())
    for (const auto& r : rows) picked.push_back(&r);
  return picked;
}

void write_total_time_chart(const std::string& path, const ExperimentPlan& plan,
                            const std::vector<ExperimentRow>& rows) {
  const auto picked = bar_rows(rows);
  std::vector<std::string> groups;
  BarSeries ours{"this machine", {}, {}, {}};
  std::vector<BarSeries> platforms;
  for (const auto& p : plan.study.platforms) platforms.push_back(BarSeries{p.name, {}, {}, {}});
  for (const ExperimentRow* r : picked) {
    groups.push_back(r->outcome.label);
    const auto estimate = r->estimated_total_seconds();
    const auto seconds = r->subset < 1.0 ? estimate : r->total_seconds;
    ours.values.push_back(seconds ? std::optional<double>(*seconds / 60.0) : std::nullopt);
    ours.hatched.push_back(r->subset < 1.0);
    ours.notes.push_back(run_status_name(r->outcome.status));
    const StudyRun* study = plan.study.find(r->outcome.study_run);
    for (std::size_t p = 0; p < platforms.size(); ++p) {
      const StudyTime t = study ? study->times[p] : StudyTime{};
      platforms[p].values.push_back(t.seconds ? std::optional<double>(*t.seconds / 60.0)
                                              : std::nullopt);
      platforms[p].notes.push_back(short_note(t.text));
    }
  }
  std::vector<BarSeries> series = {ours};
  series.insert(series.end(), platforms.begin(), platforms.end());
  BarChartOptions options;
  options.title = "Train + TTA wall time: this machine vs the study";
  options.y_label = "minutes";
  options.hatched_label = "this machine, estimate";
  write_bar_chart(path, groups, series, options);
}

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

void write_curves_chart(const std::string& path, const std::vector<ExperimentRow>& rows) {
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
  if (steps == 0) return;  // no run trained: nothing to plot
  for (std::size_t i = 0; i < steps; ++i) loss.x.push_back(static_cast<double>(i));
  lr.x = loss.x;
  for (auto* chart : {&loss, &lr}) {  // shorter runs end early: pad with gaps
    for (auto& s : chart->series) s.y.resize(steps, NAN);
    chart->options.x_label = "optimizer step";
    chart->options.width = 900;
    chart->options.height = 420;
  }
  loss.options.title = "Training loss per step";
  loss.options.y_label = "loss";
  lr.options.title = "Learning rate per step (head group)";
  lr.options.y_label = "LR";
  write_line_charts(path, {loss, lr});
}

}  // namespace

void write_experiment_charts(const std::string& out_dir, const ExperimentPlan& plan,
                             const std::vector<ExperimentRow>& rows) {
  if (rows.empty()) return;
  write_total_time_chart((fs::path(out_dir) / "total_time.png").string(), plan, rows);
  write_curves_chart((fs::path(out_dir) / "curves.png").string(), rows);
}

}  // namespace ltfit
