// `ltfit evaluate`: reload a checkpoint and report loss, accuracy, confusion matrix, per-class
// precision/recall/F1 and, with --tta, the test-time-augmented figures; writes predictions.csv.
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>

#include "cli_common.h"
#include "commands.h"
#include "ltfit/jobs/checkpoint_eval.h"
#include "ltfit/jobs/eval_report.h"
#include "ltfit/util/atomic_file.h"
#include "ltfit/util/error.h"
#include "ltfit/util/format.h"
#include "ltfit/util/output_dir.h"

namespace ltfit::cli {

namespace {

struct EvaluateArgs {
  CheckpointEvalRequest request;
  std::string out;
  bool json = false;
};

// evaluate_checkpoint, with the checkpoint's data.batch_size in an out-of-memory message.
CheckpointEvaluation evaluate_naming_batch_size(const CheckpointEvalRequest& request) {
  try {
    return evaluate_checkpoint(request);
  } catch (const std::exception& e) {
    if (!is_out_of_memory(e)) throw;
    rethrow_naming_batch_size(checkpoint_batch_size(request.checkpoint));
  }
}

void run_evaluate(EvaluateArgs args) {
  const std::filesystem::path out = args.out.empty() ? default_eval_out_dir(args.request.checkpoint)
                                                     : std::filesystem::path(args.out);
  const std::filesystem::path csv = out / "predictions.csv";
  // Before the checkpoint and the data are read: an output that cannot be written fails now,
  // not after the whole evaluation.
  check_output_file(csv, args.out.empty() ? "predictions file" : "predictions file (--out)");
  const CheckpointEvaluation evaluation = evaluate_naming_batch_size(args.request);
  create_output_dir(out, "output folder (--out)");
  write_text_atomic(csv.string(), predictions_csv(evaluation));
  spdlog::info("wrote {}", csv.string());
  if (args.json) {
    // Names escaped (util/json.h).
    std::cout << evaluation_json(evaluation, csv.string()) << std::endl;
  } else {
    std::cout << evaluation_table(evaluation) << std::flush;
  }
}

}  // namespace

void add_evaluate_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<EvaluateArgs>();
  CheckpointEvalRequest& r = args->request;
  CLI::App* cmd = app.add_subcommand(
      "evaluate",
      "evaluate a saved checkpoint on a dataset. Writes <out>/predictions.csv: "
      "path,label,predicted,prob_<class>... (with --tta: prob_* are the TTA-blended "
      "probabilities, followed by plain_prob_<class>... the plain ones)");
  cmd->add_option("--checkpoint", r.checkpoint, "checkpoint file (.ckpt)")->required();
  cmd->add_option("--data", r.data,
                  "folder of <class>/ subfolders (default: the validation split of the "
                  "checkpoint's config)");
  cmd->add_option("--device", r.device, "auto | cpu | cuda | cuda:N")->capture_default_str();
  cmd->add_option("--precision", r.precision,
                  "fp32 | bf16 | fp16 (default: the checkpoint's train.precision; fp16 on a CPU "
                  "runs fp32)");
  cmd->add_flag("--tta", r.tta, "also evaluate with test-time augmentation");
  cmd->add_option("--tta-mode", r.tta_mode,
                  "v1 (8 corner zoom x flip views) | v2 (tta_n augmented passes); default: the "
                  "checkpoint's eval.tta_mode");
  cmd->add_option("--tta-beta", r.tta_beta,
                  "weight of the plain predictions in the TTA blend (default: eval.tta_beta, or "
                  "the mode's fastai default 0.4 | 0.25 when --tta-mode changes the mode)");
  cmd->add_option("--out", args->out,
                  "folder for predictions.csv (default: the checkpoint's run directory, else the "
                  "current directory)");
  cmd->add_flag("--json", args->json, "print one JSON document on stdout (logs go to stderr)");
  cmd->callback([args, exit_code] {
    run_evaluate(*args);
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
