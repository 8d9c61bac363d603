// make_training_setup: the one place train and lr-find build data, loaders, model and optimizer.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <set>

#include "jobs/jobs_fixtures.h"
#include "ltfit/config/config_loader.h"
#include "ltfit/jobs/training_setup.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace {

using ltfit::testing::TempDir;

// Whether every 4-D parameter of `model` is in channels_last memory format.
bool all_channels_last(ltfit::Classifier& model) {
  int convs = 0;
  for (const auto& p : model->parameters()) {
    if (p.dim() != 4) continue;
    ++convs;
    if (!p.is_contiguous(torch::MemoryFormat::ChannelsLast)) return false;
  }
  return convs > 0;
}

}  // namespace

TEST_CASE("make_training_setup builds index, loaders, model and optimizer once", "[jobs]") {
  TempDir dir;
  ltfit::testing::write_small_synth(dir.path() / "data", 12, 6, 40, 60, /*seed=*/2);
  ltfit::Config config = ltfit::load_config_from_string(
      ltfit::testing::tiny_job_config(dir.path() / "data", dir.path() / "runs"), "test config");
  const bool channels_last = GENERATE(false, true);
  const bool with_valid = GENERATE(false, true);
  INFO("channels_last " << channels_last << ", with_valid " << with_valid);
  config.train.channels_last = channels_last;

  ltfit::TrainingSetup setup = ltfit::make_training_setup(config, torch::kCPU, with_valid);
  CHECK(setup.index.classes == std::vector<std::string>{"cat", "dog"});
  CHECK(setup.index.train.size() == 12);
  CHECK(setup.index.valid.size() == 6);
  REQUIRE(setup.train_loader);
  CHECK(setup.train_loader->size() == 12);
  CHECK(setup.train_options.train);
  CHECK(setup.train_options.data.batch_size == 4);
  CHECK_FALSE(setup.train_options.pin_memory);  // pinned only for a CUDA device
  CHECK_FALSE(setup.valid_options.train);
  CHECK(static_cast<bool>(setup.valid_loader) == with_valid);
  if (with_valid) CHECK(setup.valid_loader->size() == 6);

  REQUIRE(setup.model);
  CHECK(setup.model->parameters().front().device() == torch::Device(torch::kCPU));
  CHECK(all_channels_last(setup.model) == channels_last);
  REQUIRE(setup.optimizer);
  // The optimizer holds exactly the model's parameters.
  std::set<const void*> model_params, optimizer_params;
  for (const auto& p : setup.model->parameters()) model_params.insert(p.unsafeGetTensorImpl());
  for (const auto& group : setup.optimizer->param_groups()) {
    for (const auto& p : group.params()) optimizer_params.insert(p.unsafeGetTensorImpl());
  }
  CHECK(optimizer_params == model_params);
  // A batch goes through the model as built.
  setup.train_loader->start_epoch(0);
  const auto batch = setup.train_loader->next();
  REQUIRE(batch);
  CHECK(batch->images.size(0) == 4);
}

TEST_CASE("make_training_setup: a missing data root is a DataError", "[jobs]") {
  TempDir dir;
  const ltfit::Config config = ltfit::load_config_from_string(
      ltfit::testing::tiny_job_config(dir.path() / "nothing", dir.path() / "runs"), "test config");
  CHECK_THROWS_AS(ltfit::make_training_setup(config, torch::kCPU, true), ltfit::DataError);
}
