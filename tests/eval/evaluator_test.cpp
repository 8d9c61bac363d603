// The plain evaluator's precision handling and its scoring helpers.
#include <catch2/catch.hpp>

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "ltfit/eval/evaluator.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/util/error.h"

TEST_CASE("evaluation precision resolves per device", "[eval]") {
  using ltfit::Precision;
  CHECK(ltfit::resolve_eval_precision(Precision::kFp32, torch::kCPU) == Precision::kFp32);
  CHECK(ltfit::resolve_eval_precision(Precision::kBf16, torch::kCPU) == Precision::kBf16);
  CHECK(ltfit::resolve_eval_precision(Precision::kFp16, torch::kCPU) ==
        Precision::kFp32);  // logged fallback
  CHECK(ltfit::resolve_eval_precision(Precision::kFp16, torch::Device("cuda:0")) ==
        Precision::kFp16);
  CHECK_THROWS_AS(ltfit::parse_precision("fp8"), ltfit::ConfigError);
}

TEST_CASE("forward_logits runs under bf16 autocast, returns float32, restores state", "[eval]") {
  torch::manual_seed(1);
  ltfit::Classifier model = ltfit::make_classifier("resnet18", 3);
  model->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::randn({2, 3, 32, 32});
  ltfit::EvalOptions options;
  const torch::Tensor fp32 = ltfit::forward_logits(model, x, options);
  options.precision = ltfit::Precision::kBf16;
  const torch::Tensor bf16 = ltfit::forward_logits(model, x, options);
  CHECK(bf16.scalar_type() == torch::kFloat32);
  CHECK(bf16.sizes() == torch::IntArrayRef({2, 3}));
  CHECK_FALSE(torch::equal(bf16, fp32));  // the autocast really happened
  // bf16 keeps ~3 significant digits: the logits agree to a few percent of their scale.
  CHECK(torch::allclose(bf16, fp32, 0.05, 0.05 * fp32.abs().max().item<double>()));
  CHECK_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
  CHECK(at::autocast::get_autocast_dtype(at::kCPU) == at::kBFloat16);  // the CPU default
}

TEST_CASE("score_predictions counts accuracy and confusion - nll_sum is -sum log p", "[eval]") {
  const torch::Tensor probs = torch::tensor({0.9f, 0.1f, 0.3f, 0.7f, 0.6f, 0.4f}).view({3, 2});
  const torch::Tensor targets = torch::tensor({0, 1, 1}, torch::kInt64);
  const ltfit::EvalResult r =
      ltfit::score_predictions(probs, targets, torch::arange(3), ltfit::nll_sum(probs, targets));
  CHECK(r.count == 3);
  CHECK(r.accuracy == Approx(2.0 / 3.0));
  CHECK(r.loss == Approx(-(std::log(0.9) + std::log(0.7) + std::log(0.4)) / 3).epsilon(1e-5));
  CHECK(torch::equal(r.confusion, torch::tensor({1, 0, 1, 1}, torch::kInt64).view({2, 2})));
  CHECK_THROWS_AS(ltfit::score_predictions(torch::empty({0, 2}), torch::empty({0}, torch::kInt64),
                                           torch::empty({0}, torch::kInt64), 0.0),
                  ltfit::DataError);
}
