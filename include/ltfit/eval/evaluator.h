// Plain evaluation of a classifier over a loader: loss, accuracy, per-sample probabilities.
//
// Runs under NoGradGuard with the model in eval mode (restored afterwards), the forward pass
// under autocast when EvalOptions::precision asks for it; every output is float32 whatever the
// precision (logits are converted before the loss and softmax). Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "ltfit/dist/group.h"
#include "ltfit/eval/multi_label_metrics.h"
#include "ltfit/model/classifier.h"

namespace ltfit {

class Loader;

struct EvalResult {
  double loss = 0.0;            // mean cross-entropy (TTA: mean NLL of the blended probabilities);
                                // multi-label: mean binary cross-entropy over images and classes
  double accuracy = 0.0;        // fraction correct; multi-label: fastai's accuracy_multi
  std::int64_t count = 0;       // images evaluated (unreadable ones excluded)
  double seconds = 0.0;         // wall time
  torch::Tensor probabilities;  // float32 [count, classes], CPU
  torch::Tensor logits;         // float32 [count, classes], CPU: the model's outputs before the
                                // temperature (plain passes only; undefined for a TTA blend)
  torch::Tensor targets;        // int64 [count]; multi-label: float [count, classes] multi-hot
  torch::Tensor indices;        // int64 [count] positions in the loader's sample list
  torch::Tensor confusion;      // int64 [classes, classes], rows = actual, cols = predicted
                                // (single-label only)
  // Single-label with top-k on (EvalOptions::top_k resolved by resolve_top_k): k, and the
  // fraction of images whose target is among the k most probable classes; 0 and 0: off.
  int top_k = 0;
  double top_k_accuracy = 0.0;
  // Multi-label only (probabilities are then sigmoids): the thresholds used, the F1 averaged
  // over samples and over classes, the mean average precision, and the per-class figures.
  bool multi_label = false;
  std::vector<double> thresholds;
  double f1_samples = 0.0;
  double f1_macro = 0.0;
  double map = 0.0;
  std::vector<ClassScores> per_class;
};

struct EvalOptions {
  torch::Device device = torch::kCPU;      // where the model lives
  bool channels_last = false;              // feed NHWC batches
  Precision precision = Precision::kFp32;  // fp32 | bf16 (CPU or CUDA) | fp16 (CUDA): autocast
  // No readable image gives an empty result (count 0) instead of DataError: a data-parallel
  // rank's shard may be empty; all_reduce_eval decides for all ranks.
  bool allow_empty = false;
  // Multi-label: one threshold per class (a sigmoid per class, binary cross-entropy, the
  // multi-label figures); empty: single-label (softmax, cross-entropy, accuracy).
  std::vector<double> thresholds;
  // eval.temperature: probabilities and losses come from logits / temperature (temperature
  // scaling, calibration.h); 1: the logits as they are. Must be finite and > 0.
  double temperature = 1.0;
  // eval.top_k as configured: 0 (auto) or k >= 1; resolve_top_k turns it into the scored k.
  int top_k = 0;
};

// The k of top-k accuracy for a single-label model of `classes` classes: `configured` (eval.top_k)
// when >= 1, capped at `classes`; 0 (auto): 5 when there are more than 5 classes, else 0 (off).
int resolve_top_k(int configured, std::int64_t classes);

// Evaluates `model` on one pass over `loader` (which must not shuffle).
EvalResult evaluate(Classifier& model, Loader& loader, const EvalOptions& options);

// `requested` (e.g. train.precision) as evaluation can run it on `device`: fp16 on a CPU falls
// back to fp32 with an info log line; fp32 and bf16 are kept.
// The result over every rank's shard of a data-parallel run: loss, accuracy, top-k accuracy and
// count from the ranks' summed losses, correct predictions and images (`local` may be empty:
// count 0, from EvalOptions::allow_empty; its k then comes from the ranks that scored). A
// collective: every rank calls it. Per-image tensors (probabilities, targets, indices, confusion)
// stay this rank's own. Throws DataError on every rank when no rank had a readable image.
// Multi-label (`thresholds` set, one per class): the ranks' probabilities and targets are gathered
// (all-reduced into one matrix, each rank's rows at its offset) and the figures computed over all
// of them, since F1 and mAP are not sums.
EvalResult all_reduce_eval(const EvalResult& local, DistGroup& group,
                           const std::vector<double>& thresholds = {});

Precision resolve_eval_precision(Precision requested, const torch::Device& device);

// [N,3,H,W] float32 normalised on options.device -> [N,classes] float32 logits on that device,
// the forward run under autocast per options.precision. Call under NoGradGuard, model in eval().
torch::Tensor forward_logits(Classifier& model, const torch::Tensor& images,
                             const EvalOptions& options);

// Scores CPU predictions: accuracy, confusion and count from `probabilities` [N,C] float32 and
// `targets` [N] int64, and top-k accuracy with k = resolve_top_k(top_k, C); loss = loss_sum / N;
// seconds left at 0. DataError when N is 0.
EvalResult score_predictions(torch::Tensor probabilities, torch::Tensor targets,
                             torch::Tensor indices, double loss_sum, int top_k = 0);

// Sum over samples of -log p[target] (p clamped to >= 1e-12), for probabilities [N,C].
double nll_sum(const torch::Tensor& probabilities, const torch::Tensor& targets);

// ---- the task's side of evaluation: softmax and cross-entropy, or sigmoid and BCE -----------

// Logits [N,C] -> probabilities: softmax over classes, or a sigmoid per class (multi-label), of
// logits / options.temperature.
torch::Tensor output_probabilities(const torch::Tensor& logits, const EvalOptions& options);
// A batch's summed loss of logits / options.temperature: cross-entropy over images, or
// (multi-label) binary cross-entropy summed over images and classes and divided by the classes
// (so loss_sum / N is BCE's mean).
double batch_loss_sum(const torch::Tensor& logits, const torch::Tensor& labels,
                      const EvalOptions& options);
// The same sum from probabilities (TTA's blended ones; p clamped to [1e-12, 1 - 1e-12]).
double probability_loss_sum(const torch::Tensor& probabilities, const torch::Tensor& targets,
                            const EvalOptions& options);
// Probabilities [N,C] and multi-hot targets [N,C] (any float dtype, CPU) as multi_label_metrics.h
// takes them: float32 probabilities and 0/1 targets, row-major.
MultiLabelScores multi_label_scores(const torch::Tensor& probabilities,
                                    const torch::Tensor& targets);
// score_predictions, or its multi-label counterpart (multi_label_metrics.h's report at the
// options' thresholds) when options.thresholds is set.
EvalResult score_outputs(torch::Tensor probabilities, torch::Tensor targets, torch::Tensor indices,
                         double loss_sum, const EvalOptions& options);

}  // namespace ltfit
