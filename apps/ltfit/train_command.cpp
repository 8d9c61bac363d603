// `ltfit train`: train per a config file and write the run directory; `--resume` continues one.
#include <CLI/CLI.hpp>

#include "cli_common.h"
#include "commands.h"
#include "ltfit/jobs/resume.h"
#include "ltfit/jobs/train_job.h"
#include "ltfit/util/signals.h"
#include "ltfit/util/standard_output.h"

namespace ltfit::cli {

namespace {

struct TrainArgs {
  TrainRequest request;
  std::string resume;  // --resume's text, parsed into request.resume
  bool json = false;
};

}  // namespace

void add_train_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<TrainArgs>();
  TrainRequest& r = args->request;
  CLI::App* cmd = app.add_subcommand("train", "train per a config file, writing a run directory");
  cmd->add_option("--config", r.config,
                  std::string(kConfigHelp) + "; not needed with --resume CKPT");
  cmd->add_option("--set", r.sets,
                  "override a config key: --set data.batch_size=64 "
                  "(the value is parsed as YAML); repeatable");
  cmd->add_option("--run-dir", r.run_dir,
                  "write the run here instead of "
                  "<run.out_dir>/<run.name>");
  cmd->add_option("--resume", args->resume,
                  "continue from a checkpoint (CKPT), or 'auto': the newest checkpoint of the run "
                  "directory (--run-dir, or the config's run.out_dir/run.name), starting the run "
                  "there if it has none");
  cmd->add_option("--init-from", r.init_from,
                  "train more: a new run whose model starts from this checkpoint's weights (its "
                  "classes and model), with a fresh optimizer and schedule from --config (else "
                  "the checkpoint's config) and --set");
  cmd->add_flag("--json", args->json, "print summary.json on stdout at the end");
  cmd->callback([args, exit_code] {
    args->request.resume = parse_resume_request(args->resume);
    ResolvedTrain resolved = resolve_resume(args->request);
    if (resolved.completed_summary) {  // nothing to train, nothing rewritten
      const std::string summary = report_completed_run(*resolved.completed_summary);
      if (args->json) std::cout << summary << std::flush;
      *exit_code = 0;
      return;
    }
    StopSignals signals;  // SIGINT/SIGTERM: finish the step, checkpoint, exit 130
    resolved.options.stop_signal = [] { return StopSignals::requested(); };
    const RunSummary summary = naming_batch_size_on_oom(resolved.config.data.batch_size, [&] {
      return run_train_job(resolved.config, resolved.options);
    });
    if (args->json && summary.owner) write_stdout(summary_json(summary));
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
