// Checkpoint files: model weights, optimizer state, progress and the resolved config.
//
// A checkpoint is a LibTorch serialize archive (a zip). Saving writes to `<path>.tmp`, flushes it
// to disk and renames it over `path`, so a crash mid-write never destroys the previous file.
// Loading checks every tensor's name, shape and dtype before touching the model and throws
// CheckpointError (exit 4) naming the file for anything missing, extra, corrupt or mismatched.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/optim/optimizer.h>

#include "ltfit/model/resnet.h"

namespace ltfit {

struct CheckpointMeta {
  std::string config_yaml;           // the resolved config of the run
  std::vector<std::string> classes;  // class names, label order
  int epochs_done = 0;               // completed epochs (global)
  std::int64_t global_step = 0;      // completed optimizer steps
  double accuracy = 0.0;             // validation accuracy after the last completed epoch
  double valid_loss = 0.0;           // validation loss after the last completed epoch
};

// Writes atomically; `optimizer` may be null (weights-only checkpoint).
void save_checkpoint(const std::string& path, ResNet& model, torch::optim::Optimizer* optimizer,
                     const CheckpointMeta& meta);

// Reads only the metadata (to rebuild the model from its config).
CheckpointMeta read_checkpoint_meta(const std::string& path);

// Loads weights (and optimizer state when `optimizer` is non-null) into already-built objects.
CheckpointMeta load_checkpoint(const std::string& path, ResNet& model,
                               torch::optim::Optimizer* optimizer);

}  // namespace ltfit
