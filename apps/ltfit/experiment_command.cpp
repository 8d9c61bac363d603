// `ltfit experiment`: run a plan's timing matrix, one `ltfit train` child per run, and write
// the report (results.csv, report.md, charts) beside the study's figures (study/experiment_job.h).
#include <CLI/CLI.hpp>

#include "commands.h"
#include "ltfit/study/experiment_job.h"
#include "ltfit/util/error.h"
#include "ltfit/util/standard_output.h"

namespace ltfit::cli {

void add_experiment_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ExperimentRequest>();
  CLI::App* cmd = app.add_subcommand(
      "experiment", "run a timing matrix (plan file) and report it beside the study's figures");
  cmd->add_option("--plan", args->plan,
                  "plan file, or a plan's name (ltfit configs lists them), e.g. "
                  "kaggle_vs_colab")
      ->required();
  cmd->add_option("--subset", args->subset,
                  "use this fraction of each class in both splits (a rehearsal; the report "
                  "labels it and shows estimated full-size times)");
  cmd->add_option("--out", args->out,
                  "report directory (default runs/experiments/<plan name>, numbered if taken)");
  cmd->add_option("--set", args->sets,
                  "override a config key for every run (before each run's own set:); "
                  "repeatable");
  cmd->callback([args, exit_code] {
    const ExperimentJobResult result = run_experiment_job(*args);
    write_stdout(result.report_dir + "/report.md\n");
    if (!result.interrupted && !result.failed_runs.empty()) {
      std::string ids;
      for (const auto& id : result.failed_runs) ids += (ids.empty() ? "" : ", ") + id;
      throw RuntimeError(std::to_string(result.failed_runs.size()) +
                             " run(s) of the plan failed: " + ids +
                             " (the report names why: " + result.report_dir + "/report.md)",
                         "each run's log is " + result.report_dir + "/runs/<id>.log");
    }
    *exit_code = result.interrupted ? static_cast<int>(ExitCode::kInterrupted) : 0;
  });
}

}  // namespace ltfit::cli
