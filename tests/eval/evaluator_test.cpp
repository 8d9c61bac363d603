// The plain evaluator's precision handling and its scoring helpers.
//
// Torch before Catch: c10/util/Logging.h defines its own CHECK (a fatal log), which would
// otherwise replace Catch's and leave the CHECKs below uncounted and unreported.
#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include <array>
#include <thread>

#include "ltfit/dist/group.h"
#include "ltfit/eval/evaluator.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace {

// Four images over six classes whose targets rank 1st, 3rd, 6th and 5th by probability:
// top-1 1/4, top-3 2/4, top-5 3/4, top-6 4/4.
torch::Tensor top_k_probabilities() {
  return torch::tensor({0.50f, 0.15f, 0.12f, 0.10f, 0.08f, 0.05f,  //
                        0.30f, 0.25f, 0.20f, 0.12f, 0.08f, 0.05f,  //
                        0.30f, 0.25f, 0.20f, 0.15f, 0.07f, 0.03f,  //
                        0.30f, 0.25f, 0.20f, 0.15f, 0.07f, 0.03f})
      .view({4, 6});
}
torch::Tensor top_k_targets() { return torch::tensor({0, 2, 5, 4}, torch::kInt64); }

}  // namespace

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

TEST_CASE("top-k accuracy counts the target among the k most probable classes", "[eval]") {
  CHECK(ltfit::resolve_top_k(0, 5) == 0);  // auto: off up to 5 classes
  CHECK(ltfit::resolve_top_k(0, 6) == 5);  // then top-5
  CHECK(ltfit::resolve_top_k(0, 1000) == 5);
  CHECK(ltfit::resolve_top_k(3, 10) == 3);
  CHECK(ltfit::resolve_top_k(3, 2) == 2);  // capped at the class count
  const auto scored = [](int top_k) {
    return ltfit::score_predictions(top_k_probabilities(), top_k_targets(), torch::arange(4), 0.0,
                                    top_k);
  };
  const ltfit::EvalResult automatic = scored(0);
  CHECK(automatic.accuracy == 0.25);
  CHECK(automatic.top_k == 5);
  CHECK(automatic.top_k_accuracy == 0.75);
  CHECK((scored(3).top_k == 3 && scored(3).top_k_accuracy == 0.5));
  CHECK(scored(1).top_k_accuracy == automatic.accuracy);  // top-1 is accuracy
  CHECK((scored(10).top_k == 6 && scored(10).top_k_accuracy == 1.0));
  // Through score_outputs, as evaluate, TTA and the trainer call it: EvalOptions::top_k.
  ltfit::EvalOptions options;
  options.top_k = 3;
  const ltfit::EvalResult via_options =
      ltfit::score_outputs(top_k_probabilities(), top_k_targets(), torch::arange(4), 0.0, options);
  CHECK(via_options.top_k_accuracy == 0.5);
  // Two classes: auto leaves it off.
  const torch::Tensor two = torch::tensor({0.9f, 0.1f, 0.3f, 0.7f}).view({2, 2});
  const ltfit::EvalResult binary =
      ltfit::score_predictions(two, torch::tensor({0, 0}, torch::kInt64), torch::arange(2), 0.0);
  CHECK((binary.top_k == 0 && binary.top_k_accuracy == 0.0));
  // Multi-label results have none.
  options.thresholds = std::vector<double>(6, 0.5);
  const ltfit::EvalResult multi = ltfit::score_outputs(top_k_probabilities(), torch::zeros({4, 6}),
                                                       torch::arange(4), 0.0, options);
  CHECK(multi.top_k == 0);
}

TEST_CASE("all_reduce_eval sums top-k correct predictions over the ranks, an empty one too",
          "[eval][dist]") {
  const int port = ltfit::testing::free_loopback_port();
  std::array<ltfit::EvalResult, 2> both, one_empty;
  std::array<std::string, 2> errors;
  auto body = [&](int rank) {
    try {
      ltfit::LaunchInfo launch;
      launch.launcher = "env";
      launch.rank = rank;
      launch.world_size = 2;
      launch.master_addr = "127.0.0.1";
      launch.master_port = port;
      ltfit::DistConfig config;
      config.timeout_seconds = 20;
      ltfit::DistGroup group(launch, config, ltfit::DistBackend::kGloo, torch::kCPU);
      // Rank 0 holds images 0 and 1 (2 in the top 5), rank 1 images 2 and 3 (1).
      const torch::Tensor rows = torch::arange(2 * rank, 2 * rank + 2);
      const ltfit::EvalResult local =
          ltfit::score_predictions(top_k_probabilities().index_select(0, rows),
                                   top_k_targets().index_select(0, rows), rows, 0.0);
      both[std::size_t(rank)] = ltfit::all_reduce_eval(local, group);
      one_empty[std::size_t(rank)] =
          ltfit::all_reduce_eval(rank == 0 ? local : ltfit::EvalResult{}, group);
    } catch (const std::exception& e) {
      errors[std::size_t(rank)] = e.what();
    }
  };
  std::thread other(body, 1);
  body(0);
  other.join();
  INFO("rank 0: " << errors[0] << " | rank 1: " << errors[1]);
  REQUIRE((errors[0].empty() && errors[1].empty()));
  for (const ltfit::EvalResult& r : both) {
    CHECK((r.count == 4 && r.top_k == 5 && r.top_k_accuracy == 0.75 && r.accuracy == 0.25));
  }
  for (const ltfit::EvalResult& r : one_empty) {  // the empty rank learns k from the other
    CHECK((r.count == 2 && r.top_k == 5 && r.top_k_accuracy == 1.0));
  }
}
