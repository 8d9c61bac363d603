// `ltfit interpret`: what a trained checkpoint gets wrong and why, after fastai's
// ClassificationInterpretation (plot_top_losses, most_confused, the confusion matrix) with
// Grad-CAM beside each image.
//
// Writes into the output folder (default: <run dir>/interpret for a checkpoint in a run
// directory, else ./interpret):
//   top_losses.png     the highest-loss images, each beside its Grad-CAM overlay, titled
//                      predicted / actual / loss / probability of the actual class (fastai v1's
//                      plot_top_losses title; v2 shows the predicted class's probability);
//                      multi-label: one row per class, its images of highest binary loss
//   top_losses.csv     rank,path,actual,predicted,loss,probability (multi-label: class first)
//   most_confused.csv  actual,predicted,count, most first (single-label)
//   confusion_matrix.png, predictions.csv  as `ltfit evaluate` writes them
// and, when the checkpoint is in a run directory, the pictures into a new TensorBoard events
// file of its tb/ folder (tags interpret/top_losses, interpret/confusion_matrix) at the
// checkpoint's step. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ltfit/jobs/checkpoint_eval.h"

namespace ltfit {

struct InterpretRequest {
  CheckpointEvalRequest eval;  // checkpoint, data, split, device, precision (TTA unused)
  int top = 9;                 // --top: images shown (multi-label: per class)
  std::int64_t min_count = 1;  // --min-count: pairs confused fewer times are left out
  std::string out;             // --out; empty: see above
  bool tensorboard = true;     // write the pictures into the run's TensorBoard folder
};

// One of the highest-loss images.
struct TopLoss {
  std::int64_t sample = 0;        // index into CheckpointEvaluation::samples
  std::int64_t class_index = -1;  // multi-label: the class judged; -1 single-label
  // Single-label: the actual and predicted classes. Multi-label: 1 when the image has
  // class_index / when its probability is above the class's threshold, else 0.
  std::int64_t actual = 0;
  std::int64_t predicted = 0;
  double loss = 0.0;         // -ln p(actual class) (p >= 1e-12); multi-label: the class's BCE
  double probability = 0.0;  // p of the actual class; multi-label: the class's sigmoid
};

// An (actual, predicted) pair of different classes and how often it happened.
struct ConfusedPair {
  std::int64_t actual = 0;
  std::int64_t predicted = 0;
  std::int64_t count = 0;
};

// fastai's most_confused(min_val): the off-diagonal cells of `confusion` (rows actual, columns
// predicted) holding at least `min_count`, most first (ties: by actual, then predicted class).
std::vector<ConfusedPair> most_confused(const torch::Tensor& confusion, std::int64_t min_count);

// The `top` highest-loss images of `result` (ties: lower sample index first). Multi-label: the
// `top` highest binary cross-entropies of each class in turn, class by class.
std::vector<TopLoss> top_losses(const EvalResult& result, int top);

struct InterpretResult {
  CheckpointEvaluation evaluation;
  std::vector<TopLoss> top_losses;
  std::vector<ConfusedPair> most_confused;  // empty for multi-label
  std::string out_dir;
  std::vector<std::string> files;  // the files written, in writing order
  std::string events_file;         // the TensorBoard events file written, or empty
};

// Runs it. The output folder is checked writable before the checkpoint and the data are read
// (WriteError, exit 5, naming it), and none of its files may be the checkpoint (ConfigError,
// exit 2: check_output_not_input); --top below 1 or --min-count below 1 is a ConfigError (exit 2).
InterpretResult run_interpret_job(const InterpretRequest& request);

// The report printed without --json: evaluate's table, the top losses and the most confused
// pairs.
std::string interpret_table(const InterpretResult& result);
// The document printed with --json.
std::string interpret_json(const InterpretResult& result);

}  // namespace ltfit
