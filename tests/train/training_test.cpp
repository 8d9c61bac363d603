// A few real training steps on a tiny generated image set, and checkpoint round trips.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "ltfit/data/dataset_index.h"
#include "ltfit/data/loader.h"
#include "ltfit/data/synth.h"
#include "ltfit/eval/evaluator.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/train/checkpoint.h"
#include "ltfit/train/one_cycle.h"
#include "ltfit/train/optimizer.h"
#include "ltfit/train/trainer.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace {

constexpr int kImageSize = 32;

std::vector<ltfit::Sample> tiny_train_set(const ltfit::testing::TempDir& dir) {
  return ltfit::testing::write_small_synth(dir.path(), 16, 8, 48, 80);
}

ltfit::LoaderOptions loader_options(bool train) {
  ltfit::LoaderOptions o;
  o.data.image_size = kImageSize;
  o.data.batch_size = 8;
  o.train = train;
  o.data.workers = 2;
  return o;
}

}  // namespace

TEST_CASE("a few AdamW steps on one batch lower the loss", "[train]") {
  ltfit::testing::TempDir dir;
  ltfit::Loader loader(tiny_train_set(dir), loader_options(true));
  loader.start_epoch(0);
  const auto batch = loader.next();
  REQUIRE(batch.has_value());
  REQUIRE(batch->images.sizes() == torch::IntArrayRef({8, kImageSize, kImageSize, 3}));

  torch::manual_seed(1);
  ltfit::Classifier model = ltfit::make_classifier("resnet18", 2);
  auto optimizer = ltfit::make_optimizer(ltfit::OptimizerConfig{}, model->layer_group_parameters());
  ltfit::set_hyper_parameters(*optimizer, {1e-3, 1e-3, 1e-3}, 0.9);
  const torch::Tensor x = ltfit::normalize_images(batch->images, torch::kCPU, false);
  std::vector<double> losses;
  model->train();
  for (int step = 0; step < 8; ++step) {
    optimizer->zero_grad();
    const torch::Tensor loss =
        torch::nn::functional::cross_entropy(model->forward(x), batch->labels);
    losses.push_back(loss.item<double>());
    loss.backward();
    optimizer->step();
  }
  INFO("first loss " << losses.front() << ", last " << losses.back());
  CHECK(losses.back() < 0.5 * losses.front());
}

TEST_CASE("the Trainer runs a one-cycle stage, applying the schedule per step", "[train]") {
  ltfit::testing::TempDir dir;
  const auto samples = tiny_train_set(dir);
  ltfit::Loader train(samples, loader_options(true));
  ltfit::Loader valid(samples, loader_options(false));
  torch::manual_seed(2);
  ltfit::Classifier model = ltfit::make_classifier("resnet18", 2);
  auto optimizer = ltfit::make_optimizer(ltfit::OptimizerConfig{}, model->layer_group_parameters());

  struct Recorder : ltfit::TrainObserver {
    std::vector<ltfit::StepStats> steps;
    std::vector<ltfit::EpochStats> epochs;
    void on_step(const ltfit::StepStats& s) override { steps.push_back(s); }
    void on_epoch_end(const ltfit::EpochStats& e) override { epochs.push_back(e); }
  } recorder;
  ltfit::ScheduleHook schedule;
  ltfit::ObserverHook observe(recorder);
  ltfit::Trainer trainer(model, *optimizer, train, &valid, {}, {&schedule, &observe});
  ltfit::StagePlan stage{"one_cycle", 2, false, {1e-4, 1e-3, 1e-2}, ltfit::ScheduleConfig{}};
  const auto stats = trainer.fit({stage});

  REQUIRE(stats.size() == 2);
  REQUIRE(recorder.steps.size() == 4);  // 16 images / 8 per batch x 2 epochs
  CHECK(trainer.state().global_step == 4);
  ltfit::OneCycleSchedule head{4, 1e-2, 0.3, 25.0, 1e5, 0.95, 0.85, 0.95};
  for (const auto& s : recorder.steps) {
    CHECK(s.lrs[2] == Approx(ltfit::lr_at(head, s.step)));
    CHECK(s.lrs[0] == Approx(s.lrs[2] / 100));
    CHECK(s.momentum == Approx(ltfit::momentum_at(head, s.step)));
    CHECK(std::isfinite(s.loss));
  }
  CHECK(stats[1].accuracy >= 0.0);
  CHECK(stats[1].accuracy <= 1.0);
  CHECK(stats[1].error_rate == Approx(1.0 - stats[1].accuracy));
}

TEST_CASE("a frozen body trains only its BatchNorm layers and the head", "[train]") {
  ltfit::Classifier model = ltfit::make_classifier("resnet18", 2);
  ltfit::set_body_frozen(model, true);
  auto params = model->named_parameters();
  CHECK_FALSE(params["layer3.0.conv1.weight"].requires_grad());
  CHECK(params["layer3.0.bn1.weight"].requires_grad());
  CHECK(params["fc.weight"].requires_grad());
  ltfit::set_body_frozen(model, false);
  CHECK(params["layer3.0.conv1.weight"].requires_grad());
}

TEST_CASE("a frozen ConvNeXt or EfficientNet trains its norm layers and the head", "[train]") {
  struct Case {
    const char* arch;
    std::vector<const char*> trainable, frozen;
  };
  const Case cases[] = {
      {"convnext_tiny",
       {"features.0.1.weight", "features.1.0.block.2.weight", "features.6.0.bias", "head.0.weight"},
       {"features.0.0.weight", "features.1.0.block.3.weight", "features.1.0.layer_scale",
        "features.7.2.block.0.weight"}},
      {"efficientnet_b0",
       {"features.0.1.weight", "features.5.0.block.1.1.bias", "head.6.weight"},
       {"features.0.0.weight", "features.2.0.block.2.fc1.weight", "features.8.0.weight"}},
  };
  for (const Case& c : cases) {
    INFO(c.arch);
    ltfit::Classifier model = ltfit::make_classifier(c.arch, 2, ltfit::HeadKind::kFastai);
    ltfit::set_body_frozen(model, true);
    auto params = model->named_parameters();
    for (const char* name : c.trainable) {
      INFO(name);
      REQUIRE(params.contains(name));
      CHECK(params[name].requires_grad());
    }
    for (const char* name : c.frozen) {
      INFO(name);
      REQUIRE(params.contains(name));
      CHECK_FALSE(params[name].requires_grad());
    }
    ltfit::set_body_frozen(model, false);
    for (const auto& p : model->parameters()) CHECK(p.requires_grad());
  }
}

TEST_CASE("checkpoint save then load gives identical outputs and metadata", "[train][checkpoint]") {
  ltfit::testing::TempDir dir;
  torch::manual_seed(3);
  ltfit::Classifier saved = ltfit::make_classifier("resnet18", 2);
  saved->train();
  {
    torch::NoGradGuard g;
    saved->forward(torch::randn({4, 3, 32, 32}));
  }  // move BN stats
  saved->eval();
  auto optimizer = ltfit::make_optimizer(ltfit::OptimizerConfig{}, saved->layer_group_parameters());
  const std::string path = (dir.path() / "checkpoints" / "last.ckpt").string();
  ltfit::CheckpointMeta saved_meta;
  saved_meta.config_yaml = "run: {seed: 7}\n";
  saved_meta.classes = {"cat", "dog"};
  saved_meta.epochs_done = 3;
  saved_meta.global_step = 30;
  saved_meta.accuracy = 0.75;
  saved_meta.valid_loss = 0.5;
  ltfit::save_checkpoint(path, saved, optimizer.get(), saved_meta);
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));

  torch::manual_seed(4);
  ltfit::Classifier loaded = ltfit::make_classifier("resnet18", 2);
  const auto meta = ltfit::load_checkpoint(path, loaded, nullptr);
  loaded->eval();
  CHECK(meta.classes == std::vector<std::string>{"cat", "dog"});
  CHECK(meta.epochs_done == 3);
  CHECK(meta.global_step == 30);
  CHECK(meta.accuracy == 0.75);
  CHECK(meta.config_yaml == "run: {seed: 7}\n");
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::randn({2, 3, 48, 48});
  CHECK(torch::equal(saved->forward(x), loaded->forward(x)));
}

TEST_CASE("corrupt, truncated, missing or mismatched checkpoints are refused",
          "[train][checkpoint]") {
  ltfit::testing::TempDir dir;
  ltfit::Classifier model = ltfit::make_classifier("resnet18", 2);
  const std::string path = (dir.path() / "a.ckpt").string();
  ltfit::CheckpointMeta meta;
  meta.classes = {"cat", "dog"};
  ltfit::save_checkpoint(path, model, nullptr, meta);

  const std::string truncated = (dir.path() / "truncated.ckpt").string();
  const std::string bytes = ltfit::testing::read_file(path);
  ltfit::testing::write_file(truncated, bytes.substr(0, bytes.size() / 2));
  ltfit::Classifier other = ltfit::make_classifier("resnet18", 2);
  CHECK_THROWS_AS(ltfit::load_checkpoint(truncated, other, nullptr), ltfit::CheckpointError);
  CHECK_THROWS_AS(ltfit::load_checkpoint((dir.path() / "none.ckpt").string(), other, nullptr),
                  ltfit::CheckpointError);
  ltfit::testing::write_file(dir.path() / "text.ckpt", "not a checkpoint");
  CHECK_THROWS_AS(ltfit::read_checkpoint_meta((dir.path() / "text.ckpt").string()),
                  ltfit::CheckpointError);
  // A resnet34 checkpoint does not load into a resnet18 (and the model stays untouched).
  ltfit::Classifier r34 = ltfit::make_classifier("resnet34", 2);
  const torch::Tensor before = other->named_parameters()["conv1.weight"].clone();
  CHECK_THROWS_AS(ltfit::load_checkpoint(path, r34, nullptr), ltfit::CheckpointError);
  ltfit::Classifier three = ltfit::make_classifier("resnet18", 3);
  CHECK_THROWS_AS(ltfit::load_checkpoint(path, three, nullptr), ltfit::CheckpointError);
  CHECK_THROWS_WITH(ltfit::load_checkpoint(path, three, nullptr),
                    Catch::Matchers::Contains("fc.weight"));
  CHECK(torch::equal(before, other->named_parameters()["conv1.weight"]));
}
