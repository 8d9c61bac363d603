// Test-time augmentation: the blend arithmetic, and v1 / v2 TTA of a tiny Classifier on generated
// images, in fp32 and under bf16 autocast on the CPU (always float32 out: fastai#1203).
#include <catch2/catch.hpp>

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "ltfit/data/loader.h"
#include "ltfit/eval/evaluator.h"
#include "ltfit/eval/tta.h"
#include "ltfit/eval/tta_views.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace {

constexpr int kSize = 32;

ltfit::LoaderOptions valid_options() {
  ltfit::LoaderOptions options;
  options.data.image_size = kSize;
  options.data.batch_size = 4;
  options.data.workers = 2;
  options.seed = 7;
  return options;
}

// A ResNet-18 whose BatchNorm running statistics match these images, so its outputs are
// neither saturated nor constant (a freshly initialised one in eval mode would be).
ltfit::Classifier calibrated_model(ltfit::Loader& loader) {
  torch::manual_seed(3);
  ltfit::Classifier model = ltfit::make_classifier("resnet18", 2);
  torch::NoGradGuard no_grad;
  model->train();
  for (int round = 0; round < 5; ++round) {
    loader.start_epoch(0);
    while (auto batch = loader.next()) {
      model->forward(ltfit::normalize_images(batch->images, torch::kCPU, false));
    }
  }
  model->eval();
  return model;
}

// Every image of `loader` in one float [N,3,S,S] batch, with its labels.
std::pair<torch::Tensor, torch::Tensor> whole_set(ltfit::Loader& loader) {
  std::vector<torch::Tensor> images, labels;
  loader.start_epoch(0);
  while (auto batch = loader.next()) {
    images.push_back(ltfit::normalize_images(batch->images, torch::kCPU, false));
    labels.push_back(batch->labels);
  }
  return {torch::cat(images), torch::cat(labels)};
}

void check_probabilities(const torch::Tensor& p, std::int64_t rows) {
  CHECK(p.scalar_type() == torch::kFloat32);
  CHECK(p.sizes() == torch::IntArrayRef({rows, 2}));
  CHECK(torch::allclose(p.sum(1), torch::ones({rows}), 1e-5, 1e-5));
}

struct TinySet {
  ltfit::testing::TempDir dir;
  std::vector<ltfit::Sample> samples =
      ltfit::testing::write_small_synth(dir.path(), 10, 2, 40, 64, /*seed=*/11);
};

}  // namespace

TEST_CASE("TTA blends are beta * plain + (1 - beta) * augmented", "[eval][tta]") {
  const torch::Tensor plain = torch::tensor({1.0f, 0.0f, 0.2f, 0.8f}).view({2, 2});
  const torch::Tensor augmented = torch::tensor({0.0f, 1.0f, 0.6f, 0.4f}).view({2, 2});
  const torch::Tensor v1 = ltfit::blend_tta(plain, augmented, 0.4);  // fastai v1 TTA()
  CHECK(torch::allclose(v1, torch::tensor({0.4f, 0.6f, 0.44f, 0.56f}).view({2, 2})));
  const torch::Tensor v2 = ltfit::blend_tta(plain, augmented, 0.25);  // v2: lerp(aug, plain)
  CHECK(torch::allclose(v2, torch::tensor({0.25f, 0.75f, 0.5f, 0.5f}).view({2, 2})));
  CHECK(torch::equal(ltfit::blend_tta(plain, augmented, 1.0), plain));
  CHECK(ltfit::blend_tta(plain.to(torch::kBFloat16), augmented, 0.5).scalar_type() ==
        torch::kFloat32);
}

TEST_CASE("v1 TTA of a tiny Classifier equals its views computed by hand", "[eval][tta]") {
  TinySet set;
  ltfit::Loader loader(set.samples, valid_options());
  ltfit::Classifier model = calibrated_model(loader);
  const ltfit::EvalConfig eval;  // v1, beta 0.4, scale 1.35
  const ltfit::TtaResult r = ltfit::tta_v1(model, loader, eval, {});
  const std::int64_t n = loader.size();
  REQUIRE(r.tta.count == n);
  CHECK(r.mode == "v1");
  CHECK(r.views == 8);
  check_probabilities(r.plain.probabilities, n);
  check_probabilities(r.tta.probabilities, n);
  CHECK_FALSE(model->is_training());

  const ltfit::EvalResult plain = ltfit::evaluate(model, loader, {});
  CHECK(torch::allclose(r.plain.probabilities, plain.probabilities, 1e-5, 1e-6));
  CHECK(r.plain.loss == Approx(plain.loss).epsilon(1e-5));

  const auto [x, labels] = whole_set(loader);
  torch::NoGradGuard no_grad;
  const torch::Tensor views = torch::softmax(model->forward(ltfit::tta_v1_views(x, 1.35)), 1);
  const torch::Tensor augmented = views.view({8, n, 2}).mean(0);
  const torch::Tensor expected = 0.4 * plain.probabilities + 0.6 * augmented;
  CHECK(torch::allclose(r.tta.probabilities, expected, 1e-4, 1e-5));
  CHECK_FALSE(torch::allclose(r.tta.probabilities, r.plain.probabilities, 1e-4, 1e-4));
  const double nll = -expected.gather(1, labels.unsqueeze(1)).log().mean().item<double>();
  CHECK(r.tta.loss == Approx(nll).epsilon(1e-4));
  CHECK(torch::equal(r.tta.targets, labels));
  CHECK(r.tta.confusion.sum().item<std::int64_t>() == n);
  CHECK(r.seconds >= r.plain.seconds);
}

TEST_CASE("v2 TTA averages n augmented passes, reproducibly", "[eval][tta]") {
  TinySet set;
  ltfit::Loader loader(set.samples, valid_options());
  ltfit::Classifier model = calibrated_model(loader);
  ltfit::EvalConfig eval;
  eval.tta_mode = ltfit::TtaMode::kV2;
  eval.tta_beta = 0.25;
  eval.tta_n = 3;
  const ltfit::TtaResult r = ltfit::run_tta(model, loader, valid_options(), eval, {});
  const std::int64_t n = loader.size();
  CHECK(r.mode == "v2");
  CHECK(r.views == 3);
  CHECK(r.beta == 0.25);
  check_probabilities(r.tta.probabilities, n);
  CHECK_FALSE(torch::allclose(r.tta.probabilities, r.plain.probabilities, 1e-4, 1e-4));
  const ltfit::TtaResult again = ltfit::run_tta(model, loader, valid_options(), eval, {});
  CHECK(torch::allclose(again.tta.probabilities, r.tta.probabilities, 1e-6, 1e-6));
  eval.tta_n = 1;  // fewer passes: a different average
  const ltfit::TtaResult one = ltfit::run_tta(model, loader, valid_options(), eval, {});
  CHECK_FALSE(torch::allclose(one.tta.probabilities, r.tta.probabilities, 1e-5, 1e-5));
  CHECK_THROWS_AS(ltfit::parse_tta_mode("v3"), ltfit::ConfigError);
}

TEST_CASE("v1 and v2 TTA under bf16 autocast on the CPU give float32 probabilities",
          "[eval][tta]") {
  TinySet set;
  ltfit::Loader loader(set.samples, valid_options());
  ltfit::Classifier model = calibrated_model(loader);
  ltfit::EvalOptions bf16;
  bf16.precision = ltfit::Precision::kBf16;
  for (const char* mode : {"v1", "v2"}) {
    INFO(mode);
    ltfit::EvalConfig eval;
    eval.tta_mode = ltfit::parse_tta_mode(mode);
    eval.tta_n = 2;
    const ltfit::TtaResult fp = ltfit::run_tta(model, loader, valid_options(), eval, {});
    const ltfit::TtaResult low = ltfit::run_tta(model, loader, valid_options(), eval, bf16);
    check_probabilities(low.plain.probabilities, loader.size());
    check_probabilities(low.tta.probabilities, loader.size());
    // Close to fp32 yet not identical: the forward really ran in bfloat16.
    CHECK(torch::allclose(low.tta.probabilities, fp.tta.probabilities, 0.0, 0.1));
    CHECK_FALSE(torch::equal(low.plain.probabilities, fp.plain.probabilities));
    CHECK_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
  }
}
