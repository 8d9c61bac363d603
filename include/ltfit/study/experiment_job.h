// `ltfit experiment`: run a plan's timing matrix (experiment.h: one `ltfit train` child per
// run), logging each run as it starts and ends, then write the report (results.csv, report.md,
// charts; experiment_report.h). SIGINT/SIGTERM stop it after the running child checkpoints; the
// later runs are skipped and the report still written. It lives in study/, not jobs/, because
// the plan and the report are study's (jobs sit below study). Not thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ltfit {

struct ExperimentRequest {
  std::string plan;                // plan file
  std::optional<double> subset;    // data.subset for every run, in (0, 1]
  std::optional<std::string> out;  // report directory; default runs/experiments/<plan name>[-N]
  std::vector<std::string> sets;   // --set key=value for every run, after --subset
};

struct ExperimentJobResult {
  std::string report_dir;                // where report.md was written
  bool interrupted = false;              // a stop was requested: runs after it were skipped
  std::vector<std::string> failed_runs;  // ids of the runs that failed (not the n/a ones)
};

// Runs the plan and writes the report, also when runs fail (failed_runs names them; the CLI then
// exits 5). ConfigError (exit 2), before any run starts, for a bad plan, --subset or --set, a
// run whose config does not resolve (experiment.h), or a report folder that is one of the plan's
// files (check_output_not_input).
ExperimentJobResult run_experiment_job(const ExperimentRequest& request);

}  // namespace ltfit
