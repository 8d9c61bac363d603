// `ltfit evaluate`'s work: see evaluate_job.h.
#include "ltfit/jobs/evaluate_job.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "ltfit/config/config_loader.h"
#include "ltfit/jobs/eval_report.h"
#include "ltfit/jobs/output_check.h"
#include "ltfit/train/checkpoint.h"
#include "ltfit/util/atomic_file.h"
#include "ltfit/util/error.h"
#include "ltfit/util/output_dir.h"
#include "ltfit/util/temp_files.h"

namespace ltfit {

namespace {

// data.batch_size of a checkpoint's config; 0 when it cannot be read. For error messages only.
int checkpoint_batch_size(const std::string& checkpoint) noexcept {
  try {
    const CheckpointMeta meta = read_checkpoint_meta(checkpoint);
    return load_config_from_string(meta.config_yaml, checkpoint).data.batch_size;
  } catch (...) {
    return 0;
  }
}

// evaluate_checkpoint, with the checkpoint's data.batch_size in an out-of-memory message.
CheckpointEvaluation evaluate_naming_batch_size(const CheckpointEvalRequest& request) {
  try {
    return evaluate_checkpoint(request);
  } catch (const std::exception& e) {
    if (!is_out_of_memory(e)) throw;
    rethrow_naming_batch_size(checkpoint_batch_size(request.checkpoint));
  }
}

}  // namespace

EvaluateJobResult run_evaluate_job(const EvaluateJobRequest& request) {
  const std::filesystem::path out = request.out.empty()
                                        ? default_eval_out_dir(request.eval.checkpoint)
                                        : std::filesystem::path(request.out);
  const std::filesystem::path csv = out / "predictions.csv";
  // Before the checkpoint and the data are read: an output that cannot be written fails now,
  // not after the whole evaluation.
  check_output_file(csv, request.out.empty() ? "predictions file" : "predictions file (--out)");
  EvaluateJobResult result{evaluate_naming_batch_size(request.eval), csv.string(),
                           (out / "confusion_matrix.png").string()};
  create_output_dir(out, "output folder (--out)");
  remove_stale_temp_files(out.string(), "predictions.csv");  // a killed evaluate's (temp_files.h)
  write_text_atomic(result.predictions_csv, predictions_csv(result.evaluation));
  write_file_atomic(result.confusion_png, confusion_png(result.evaluation).bytes);
  spdlog::info("wrote {} and {}", result.predictions_csv, result.confusion_png);
  return result;
}

}  // namespace ltfit
