// `ltfit evaluate`: reload a checkpoint and report loss, accuracy, confusion matrix, per-class
// precision/recall/F1, calibration (NLL, ECE) and, with --tta, the test-time-augmented figures;
// writes predictions.csv, confusion_matrix.png and reliability.png.
#include <CLI/CLI.hpp>

#include "cli_common.h"
#include "commands.h"
#include "ltfit/jobs/eval_report.h"
#include "ltfit/jobs/evaluate_job.h"
#include "ltfit/util/signals.h"
#include "ltfit/util/standard_output.h"

namespace ltfit::cli {

namespace {

struct EvaluateArgs {
  EvaluateJobRequest job;
  bool json = false;
};

void run_evaluate(const EvaluateArgs& args) {
  const EvaluateJobResult result = run_evaluate_job(args.job);
  if (args.json) {
    // Names escaped (util/json.h).
    write_stdout(evaluation_json(result.evaluation, result.predictions_csv, result) + "\n");
  } else {
    write_stdout(evaluation_table(result.evaluation) + tuned_thresholds_table(result));
  }
}

}  // namespace

void add_evaluate_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<EvaluateArgs>();
  CheckpointEvalRequest& r = args->job.eval;
  CLI::App* cmd = app.add_subcommand(
      "evaluate",
      "evaluate a saved checkpoint on a dataset. Writes <out>/predictions.csv: "
      "path,label,predicted,loss,prob_<class>... (loss: the image's cross-entropy; with --tta: "
      "prob_* are the TTA-blended probabilities, followed by plain_prob_<class>... the plain "
      "ones), <out>/confusion_matrix.png and <out>/reliability.png (the reliability diagram). "
      "Also reports calibration: NLL and ECE (15 bins) of the probabilities at the "
      "checkpoint's eval.temperature (see ltfit calibrate)");
  cmd->add_option("--checkpoint", r.checkpoint, "checkpoint file (.ckpt)")->required();
  cmd->add_option("--data", r.data,
                  "a folder of <class>/ subfolders, or a dataset root: train/ valid/ (test/) "
                  "folders of them, or Kaggle's flat <class>.<N>.jpg files split as training did "
                  "(data.valid_count, run.seed). Default: the validation split of the "
                  "checkpoint's data.root");
  cmd->add_option("--split", r.split,
                  "the dataset root's split to evaluate: train | valid | test (default: valid; "
                  "without --data: of the checkpoint's data.root)")
      ->check(CLI::IsMember({"train", "valid", "test"}));
  add_checkpoint_run_options(cmd, r.device, r.precision);
  cmd->add_flag("--tta", r.tta, "also evaluate with test-time augmentation");
  cmd->add_option("--tta-mode", r.tta_mode,
                  "v1 (8 corner zoom x flip views) | v2 (tta_n augmented passes); default: the "
                  "checkpoint's eval.tta_mode");
  cmd->add_option("--tta-beta", r.tta_beta,
                  "weight of the plain predictions in the TTA blend (default: eval.tta_beta, or "
                  "the mode's fastai default 0.4 | 0.25 when --tta-mode changes the mode)");
  cmd->add_option("--out", args->job.out,
                  "folder for predictions.csv, confusion_matrix.png and reliability.png "
                  "(default: the checkpoint's run directory, else the current directory)");
  add_json_flag(cmd, args->json);
  cmd->add_flag("--tune-thresholds", args->job.tune_thresholds,
                "multi-label: per-class thresholds that maximise each class's F1 on the evaluated "
                "images (the TTA probabilities with --tta), written into <checkpoint>-tuned.ckpt "
                "beside the checkpoint (its eval.thresholds), which predict and evaluate then use");
  cmd->callback([args, exit_code] {
    StopSignals signals(StopMode::kExitNow);  // nothing to save: exit 130, temporaries removed
    run_evaluate(*args);
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
