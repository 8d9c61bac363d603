// The report of an experiment plan: results.csv, report.md, total_time.png and curves.png in
// the report directory, beside the study's published figures.
//
// Every measured number comes from the run directories (summary.json, epochs.csv, steps.csv,
// timing.json, config.yaml, env.json) and every published one from the study file. With
// data.subset F < 1 the report is labelled a rehearsal and also shows an *estimated* full-size
// time, total / F (training and TTA time both scale with the number of images), in its own
// column and as lighter hatched bars, never in place of a measurement. Runs with `gpus:` also
// get a scaling section: their training speed-up over the 1-GPU run, beside the study file's
// published multi-GPU speed-ups ("n/a" where a run did not run).
// Thread-safe (no shared state); writes files atomically.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ltfit/study/experiment.h"
#include "ltfit/study/experiment_plan.h"

namespace ltfit {

// One row of results.csv: a run's outcome and the figures read from its run directory.
struct ExperimentRow {
  RunOutcome outcome;     // id, label, status, reason, run_dir; config from the run's config.yaml
  int epochs = 0;         // train.epochs (config.yaml, else the resolved)
  int batch_size = 0;     // data.batch_size
  std::string precision;  // train.precision
  std::optional<bool> channels_last;           // train.channels_last
  double subset = 1.0;                         // data.subset
  std::optional<double> train_seconds;         // summary.json
  std::optional<double> tta_seconds;           // summary.json (null: no TTA)
  std::optional<double> total_seconds;         // summary.json: train + TTA
  std::optional<double> images_per_second;     // mean over epochs.csv's rows
  std::optional<double> accuracy;              // summary.json, 0..1
  std::optional<double> tta_accuracy;          // summary.json, 0..1
  std::optional<std::int64_t> peak_rss_bytes;  // timing.json
  std::optional<std::int64_t> peak_gpu_bytes;  // timing.json (null: no GPU)
  std::int64_t train_images = 0;               // summary.json
  std::int64_t valid_images = 0;               // summary.json
  std::optional<int> world_size;               // summary.json: training processes (multi-GPU)

  // total / subset when subset < 1 (an estimate for the whole data set), else null.
  std::optional<double> estimated_total_seconds() const;
  // A run killed and resumed (kill_at_epoch): the time the cut cost (RunCut::time_lost).
  std::optional<double> time_lost_seconds() const;
};

// Reads what `outcome.run_dir` holds (missing files leave fields empty).
ExperimentRow read_experiment_row(const RunOutcome& outcome);

// What the report needs besides the rows.
struct ReportContext {
  std::vector<Override> overrides;     // the command line's --subset/--set, shown in the report
  std::optional<double> wall_seconds;  // the whole plan's wall time
};

// results.csv (RFC 4180 quoting).
std::string results_csv(const std::vector<ExperimentRow>& rows);

// `text` as a Markdown table cell: '|' escaped, line breaks as spaces.
std::string markdown_cell(const std::string& text);

// report.md's "Killed and resumed" section for the runs with kill_at_epoch; "" when none has it.
std::string cut_section(const std::vector<ExperimentRow>& rows);

// report.md's text.
std::string experiment_report_markdown(const ExperimentPlan& plan,
                                       const std::vector<ExperimentRow>& rows,
                                       const ReportContext& context);

// total_time.png (grouped bars per run: this machine vs each platform, minutes) and
// curves.png (loss and LR per step of each run) into `out_dir` (experiment_charts.h).
void write_experiment_charts(const std::string& out_dir, const ExperimentPlan& plan,
                             const std::vector<ExperimentRow>& rows);

// Reads the rows and writes results.csv, report.md and the charts into `out_dir`; returns the
// rows.
std::vector<ExperimentRow> write_experiment_report(const std::string& out_dir,
                                                   const ExperimentPlan& plan,
                                                   const std::vector<RunOutcome>& outcomes,
                                                   const ReportContext& context);

}  // namespace ltfit
