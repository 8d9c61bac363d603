// What a training run reports once its epochs ran: the unreadable images it skipped, the final
// TTA pass and the confusion matrix for TensorBoard, over the whole validation set. Private to
// src/jobs (train_session.cpp).
#pragma once

#include <optional>

#include <torch/torch.h>

#include "ltfit/config/config.h"
#include "ltfit/data/loader.h"
#include "ltfit/jobs/dist_session.h"
#include "ltfit/jobs/training_setup.h"
#include "ltfit/model/classifier.h"
#include "ltfit/run/summary.h"

namespace ltfit {

// The loader over the whole validation set for the final passes (TTA, the confusion matrix):
// the run's own, or, in a data-parallel run whose loader holds this rank's part, one over every
// image, built once on first use.
class WholeValidation {
 public:
  WholeValidation(const TrainingSetup& setup, bool sharded) : setup_(setup), sharded_(sharded) {}
  Loader& get();

 private:
  const TrainingSetup& setup_;
  bool sharded_;
  std::optional<Loader> whole_;
};

// Unreadable images, each counted once, into the summary's skipped fields: in a data-parallel
// run (a collective there) every rank shares the files it found unreadable in its slices, and
// the count is that of their union. `valid`: null with no validation split (data.valid_pct 0).
void record_skipped(RunSummary& summary, const Loader& train, const Loader* valid,
                    DistSession& dist);

// TTA on the validation set under the training precision; fills the summary's TTA fields.
// Returns the plain pass's confusion matrix.
torch::Tensor run_final_tta(const Config& config, Classifier& model, Loader& valid_loader,
                            const LoaderOptions& valid_options, const torch::Device& device,
                            RunSummary& summary);

// The final model's confusion matrix over the whole validation set, for TensorBoard when no TTA
// pass gave it: one more plain pass.
torch::Tensor validation_confusion(const Config& config, Classifier& model, Loader& whole,
                                   const torch::Device& device);

}  // namespace ltfit
