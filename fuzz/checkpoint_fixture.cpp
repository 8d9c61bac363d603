#include "checkpoint_fixture.h"

#include "ltfit/config/config.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/train/optimizer.h"

namespace ltfit::fuzz {

namespace {

std::unique_ptr<torch::optim::Optimizer> optimizer(
    const char* name, const std::vector<std::vector<torch::Tensor>>& groups) {
  OptimizerConfig config;
  config.name = parse_optimizer_kind(name);
  return make_optimizer(config, groups);
}

}  // namespace

CheckpointFixture::CheckpointFixture()
    : model(make_classifier("resnet18", /*num_classes=*/2)),
      adamw(optimizer("adamw", model->layer_group_parameters())),
      sgd(optimizer("sgd", model->layer_group_parameters())) {}

SnapshotFixture::SnapshotFixture()
    : linear(3, 2),
      adamw(optimizer("adamw", {linear->parameters()})),
      sgd(optimizer("sgd", {linear->parameters()})) {}

}  // namespace ltfit::fuzz
