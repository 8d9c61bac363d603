// Checkpoint files: model weights, optimizer state, progress and the resolved config.
//
// A checkpoint is a LibTorch serialize archive (a zip). Saving writes to `<path>.tmp`, flushes it
// to disk and renames it over `path`, so a crash mid-write never destroys the previous file.
// Loading checks every tensor's name, shape and dtype before touching the model and throws
// CheckpointError (exit 4) naming the file for anything missing, extra, corrupt or mismatched.
// Besides weights a checkpoint holds everything needed to continue training exactly: the
// optimizer state, the position in the recipe (stage, epoch, batch), the smoothed-loss state,
// the loss scaler, and the global CPU and CUDA random generators' states.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/optim/optimizer.h>

#include "ltfit/model/resnet.h"
#include "ltfit/train/amp.h"

namespace ltfit {

// Where training stands in the recipe: enough, with the RNG states, to continue exactly.
struct TrainPosition {
  int stage = 0;                    // index of the current stage in plan_recipe() order
  int epoch_in_stage = 0;           // completed epochs of that stage
  std::int64_t batch_in_epoch = 0;  // completed batches of the current epoch (0: epoch boundary)
  double loss_avg = 0.0;            // fastai's smoothed-loss accumulator (reset per stage)
  std::int64_t loss_count = 0;      // steps in that accumulator

  bool operator==(const TrainPosition&) const = default;
};

struct CheckpointMeta {
  std::string config_yaml;           // the resolved config of the run
  std::vector<std::string> classes;  // class names, label order
  int epochs_done = 0;               // completed epochs (global)
  std::int64_t global_step = 0;      // completed optimizer steps
  double accuracy = 0.0;             // validation accuracy after the last completed epoch
  double valid_loss = 0.0;           // validation loss after the last completed epoch
  TrainPosition position;            // where to continue
  double best_accuracy = -1.0;       // best validation accuracy so far (-1: none yet)
  GradScalerState scaler;            // fp16 loss scaler
  double train_seconds = 0.0;        // training wall time so far, over every session
};

// Writes atomically; `optimizer` may be null (weights-only checkpoint). Also stores the global
// CPU and CUDA generators' states.
void save_checkpoint(const std::string& path, ResNet& model, torch::optim::Optimizer* optimizer,
                     const CheckpointMeta& meta);

// Reads only the metadata (to rebuild the model from its config).
CheckpointMeta read_checkpoint_meta(const std::string& path);

// Loads weights (and optimizer state when `optimizer` is non-null) into already-built objects;
// with `restore_rng` also sets the global CPU (and CUDA, where saved and present) generators to
// the saved states, as resuming needs.
CheckpointMeta load_checkpoint(const std::string& path, ResNet& model,
                               torch::optim::Optimizer* optimizer, bool restore_rng = false);

}  // namespace ltfit
