// Test-time augmentation (TTA) the fastai ways, batched on the model's device.
//
// v1 (fastai v1 `Learner.TTA(beta=0.4, scale=1.35)`): the plain predictions plus the 8 corner
// zoom x flip views of tta_views.h, their probabilities averaged. v2 (fastai v2
// `Learner.tta(n=4, beta=0.25)`): n passes over the same samples with the training augmentation
// (LoaderOptions::augment_in_order, pass p drawn as epoch p), averaged. Both blend
// final = beta * plain + (1 - beta) * augmented, i.e. torch.lerp(augmented, plain, beta).
// Everything returned is float32 whatever EvalOptions::precision is, so a half-precision model
// cannot break TTA the way fastai#1203 did. Runs under NoGradGuard, model in eval mode (its
// mode restored afterwards). Not thread-safe (the model and loader are used in place).
#pragma once

#include <string>

#include <torch/types.h>

#include "ltfit/config/config.h"
#include "ltfit/eval/evaluator.h"
#include "ltfit/model/classifier.h"

namespace ltfit {

class Loader;
struct LoaderOptions;

struct TtaResult {
  std::string mode;      // "v1" | "v2"
  double beta = 0.0;     // weight of the plain predictions in the blend
  int views = 0;         // augmented views per image: 8 (v1) or eval.tta_n (v2)
  EvalResult plain;      // plain predictions; seconds: the plain share (batch waits + forwards)
  EvalResult tta;        // blended probabilities; loss = mean NLL of the blend; seconds = below
  double seconds = 0.0;  // whole TTA wall time, plain pass included (as fastai counts it)
};

// beta * plain + (1 - beta) * augmented, element-wise, float32. Shapes must match.
torch::Tensor blend_tta(const torch::Tensor& plain, const torch::Tensor& augmented, double beta);

// The mean probabilities of v1's 8 views of `x`, a normalised batch [N,3,S,S] on
// options.device (NCHW or channels-last): 4 forwards of 2N images each (a corner zoom and its
// mirror), float32 [N,classes] on the CPU. The model must be in eval mode, under NoGradGuard.
// What tta_v1 blends with the plain pass; `ltfit serve` runs it on its batches.
torch::Tensor v1_view_probabilities(Classifier& model, const torch::Tensor& x, double scale,
                                    const EvalOptions& options);

// v1 in one pass over `loader` (not shuffled): per batch of N the plain forward, then the 8
// views as 4 forwards of 2N images (a corner zoom and its mirror), so at most twice the batch
// goes through the model at once. Uses eval.tta_scale and eval.tta_beta.
TtaResult tta_v1(Classifier& model, Loader& loader, const EvalConfig& eval,
                 const EvalOptions& options);

// v2: a plain evaluate() over `loader`, then eval.tta_n passes over loader.samples() through a
// second Loader made from `loader_options` (the validation options: size, batch, seed, augment)
// with augment_in_order set. Uses eval.tta_n and eval.tta_beta.
TtaResult tta_v2(Classifier& model, Loader& loader, const LoaderOptions& loader_options,
                 const EvalConfig& eval, const EvalOptions& options);

// Passes over the validation set that run_tta makes: the plain one and one per view (v1: 8,
// v2: eval.tta_n). What train.time_limit keeps in reserve for the final TTA.
int tta_passes(const EvalConfig& eval);

// tta_v1 or tta_v2 per eval.tta_mode.
TtaResult run_tta(Classifier& model, Loader& loader, const LoaderOptions& loader_options,
                  const EvalConfig& eval, const EvalOptions& options);

}  // namespace ltfit
