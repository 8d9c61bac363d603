// The model and optimizers the checkpoint fuzz target reads into, shared with the seed
// generator so that the seeds it writes match them (same arch, classes, parameter groups).
#pragma once

#include <memory>

#include <torch/nn/modules/linear.h>
#include <torch/optim/optimizer.h>

#include "ltfit/model/classifier.h"

namespace ltfit::fuzz {

// A resnet18 with 2 classes and ltfit's AdamW and SGD over its layer groups (no steps taken).
struct CheckpointFixture {
  CheckpointFixture();
  Classifier model;
  std::unique_ptr<torch::optim::Optimizer> adamw, sgd;
};

// A Linear(3, 2) and an AdamW and an SGD over its parameters (one layer group).
struct SnapshotFixture {
  SnapshotFixture();
  torch::nn::Linear linear;
  std::unique_ptr<torch::optim::Optimizer> adamw, sgd;
};

}  // namespace ltfit::fuzz
