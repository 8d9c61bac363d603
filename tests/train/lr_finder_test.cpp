// The LR range test: schedule, suggestions, divergence stop, state restored afterwards.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <cmath>

#include "ltfit/data/dataset_index.h"
#include "ltfit/data/loader.h"
#include "ltfit/data/synth.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/train/lr_finder.h"
#include "ltfit/train/optimizer.h"
#include "support/test_support.h"

TEST_CASE("lr_find sweeps exponentially from 1e-7 to 10 over 100 steps", "[train][lr_find]") {
  const ltfit::LrFindOptions o;
  CHECK(ltfit::lr_find_lr(o, 0) == Approx(1e-7));
  CHECK(ltfit::lr_find_lr(o, 50) == Approx(std::sqrt(1e-7 * 10.0)));
  CHECK(ltfit::lr_find_lr(o, 100) == Approx(10.0));
}

TEST_CASE("suggestions: steepest descent and valley on a known curve", "[train][lr_find]") {
  // Loss flat, then falling fastest around index 40, then rising: both suggestions fall in the
  // falling part.
  std::vector<double> lrs, loss;
  for (int i = 0; i < 100; ++i) {
    lrs.push_back(std::pow(10.0, -7 + 8.0 * i / 99));
    loss.push_back(i < 70 ? 2.0 - 1.5 / (1.0 + std::exp(-(i - 40) / 4.0)) : 0.5 + 0.1 * (i - 70));
  }
  const auto steep = ltfit::suggest_steepest(lrs, loss);
  REQUIRE(steep);
  CHECK(*steep == Approx(lrs[40]));
  const auto valley = ltfit::suggest_valley(lrs, loss);
  REQUIRE(valley);
  CHECK(*valley > lrs[20]);
  CHECK(*valley < lrs[69]);
  CHECK_FALSE(ltfit::suggest_steepest({1, 2}, {1, 2}).has_value());
}

TEST_CASE("lr_find stops on divergence and restores the model and optimizer", "[train][lr_find]") {
  ltfit::testing::TempDir dir;
  const auto samples = ltfit::testing::write_small_synth(dir.path(), 16, 4, 48, 64);
  ltfit::LoaderOptions lo;
  lo.data.image_size = 32;
  lo.data.batch_size = 8;
  lo.train = true;
  ltfit::Loader train(samples, lo);
  torch::manual_seed(0);
  ltfit::Classifier model = ltfit::make_classifier("resnet18", 2);
  auto optimizer = ltfit::make_optimizer(ltfit::OptimizerConfig{}, model->layer_group_parameters());
  const torch::Tensor before = model->named_parameters()["layer2.0.conv1.weight"].clone();
  const torch::Tensor mean_before = model->named_buffers()["bn1.running_mean"].clone();
  ltfit::LrFindOptions options;
  options.num_steps = 30;
  options.start_lr = 1e-3;
  options.end_lr = 1e4;  // certain to blow up
  const auto result = ltfit::lr_find(model, *optimizer, train, {}, options);
  CHECK(result.diverged);
  CHECK(result.lrs.size() < 30u);
  CHECK(result.lrs.size() == result.smoothed.size());
  CHECK(torch::equal(model->named_parameters()["layer2.0.conv1.weight"], before));
  CHECK(torch::equal(model->named_buffers()["bn1.running_mean"], mean_before));
}
