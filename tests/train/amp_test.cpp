// Mixed precision: GradScaler on fabricated gradients, AutocastGuard nesting, a short bf16
// training run on CPU, and (tagged [cuda]) fp16 with loss scaling on a GPU.
#include <cmath>
#include <fstream>
#include <limits>
#include <string>

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <torch/cuda.h>
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include "ltfit/train/amp.h"
#include "ltfit/util/error.h"

namespace {

// A tiny Linear with an SGD optimizer (lr 0.1, no momentum) and hand-made gradients.
struct TinyModel {
  torch::nn::Linear linear{3, 2};
  torch::optim::SGD sgd{linear->parameters(), torch::optim::SGDOptions(0.1)};
  torch::Tensor grad_w = torch::tensor({{1.0f, -2.0f, 0.5f}, {0.25f, 4.0f, -1.0f}});
  torch::Tensor grad_b = torch::tensor({3.0f, -0.5f});

  // Sets p.grad() to the true gradients times `scale` (what backward of a scaled loss gives).
  void set_scaled_grads(double scale) {
    linear->weight.mutable_grad() = grad_w * scale;
    linear->bias.mutable_grad() = grad_b * scale;
  }
  std::vector<torch::Tensor> snapshot() const {
    return {linear->weight.detach().clone(), linear->bias.detach().clone()};
  }
};

double mean_loss(torch::nn::Sequential& model, const torch::Tensor& x, const torch::Tensor& y) {
  torch::NoGradGuard no_grad;
  return torch::nn::functional::cross_entropy(model->forward(x), y).item<double>();
}

// Full-batch training of a small MLP on a linearly separable problem; returns (first, last) loss.
std::pair<double, double> train_tiny(const torch::Device& device, torch::Dtype dtype,
                                     ltfit::GradScaler& scaler, int steps) {
  torch::manual_seed(7);
  torch::nn::Sequential model(torch::nn::Linear(8, 32), torch::nn::ReLU(),
                              torch::nn::Linear(32, 2));
  model->to(device);
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  const torch::Tensor x = torch::randn({128, 8}).to(device);
  const torch::Tensor y = (x.sum(1) > 0).to(torch::kLong);
  const double first = mean_loss(model, x, y);
  for (int i = 0; i < steps; ++i) {
    sgd.zero_grad(/*set_to_none=*/true);
    torch::Tensor loss;
    {
      ltfit::AutocastGuard autocast(device.type(), dtype);
      loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    }
    scaler.scale(loss).backward();
    scaler.step(sgd);
    scaler.update();
  }
  return {first, mean_loss(model, x, y)};
}

}  // namespace

TEST_CASE("GradScaler defaults follow torch.amp.GradScaler", "[train][amp]") {
  const ltfit::GradScalerOptions options;
  CHECK(options.init_scale == 65536.0);
  CHECK(options.growth_factor == 2.0);
  CHECK(options.backoff_factor == 0.5);
  CHECK(options.growth_interval == 2000);
  const ltfit::GradScaler scaler;
  CHECK(scaler.enabled());
  CHECK(scaler.scale_value() == 65536.0);
  CHECK(scaler.state().growth_tracker == 0);
}

TEST_CASE("GradScaler unscales finite gradients and steps", "[train][amp]") {
  TinyModel m;
  ltfit::GradScaler scaler;
  const torch::Tensor loss = torch::tensor(0.75f);
  CHECK(scaler.scale(loss).item<double>() == Approx(0.75 * 65536.0));
  const auto before = m.snapshot();
  m.set_scaled_grads(scaler.scale_value());
  CHECK_FALSE(scaler.unscale(m.sgd));
  CHECK(torch::allclose(m.linear->weight.grad(), m.grad_w));
  CHECK(torch::allclose(m.linear->bias.grad(), m.grad_b));
  CHECK_FALSE(scaler.unscale(m.sgd));  // idempotent: grads are not divided a second time
  CHECK(torch::allclose(m.linear->weight.grad(), m.grad_w));
  CHECK(scaler.step(m.sgd));
  CHECK(torch::allclose(m.linear->weight.detach(), before[0] - 0.1 * m.grad_w));
  CHECK(torch::allclose(m.linear->bias.detach(), before[1] - 0.1 * m.grad_b));
  scaler.update();
  CHECK(scaler.scale_value() == 65536.0);
  CHECK(scaler.state().growth_tracker == 1);
}

TEST_CASE("GradScaler skips the step and backs off on inf or NaN gradients", "[train][amp]") {
  for (const float bad :
       {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    INFO("bad gradient " << bad);
    TinyModel m;
    ltfit::GradScaler scaler;
    m.set_scaled_grads(scaler.scale_value());
    REQUIRE(scaler.step(m.sgd));  // a clean step first, so the tracker is 1
    scaler.update();
    REQUIRE(scaler.state().growth_tracker == 1);
    const auto before = m.snapshot();
    m.set_scaled_grads(scaler.scale_value());
    m.linear->weight.mutable_grad()[1][2] = bad;
    CHECK(scaler.unscale(m.sgd));
    CHECK_FALSE(scaler.step(m.sgd));
    CHECK(torch::equal(m.linear->weight.detach(), before[0]));
    CHECK(torch::equal(m.linear->bias.detach(), before[1]));
    scaler.update();
    CHECK(scaler.scale_value() == 32768.0);
    CHECK(scaler.state().growth_tracker == 0);
  }
}

TEST_CASE("GradScaler grows the scale after growth_interval clean steps", "[train][amp]") {
  TinyModel m;
  ltfit::GradScalerOptions options;
  options.growth_interval = 3;
  ltfit::GradScaler scaler(options);
  auto clean_step = [&] {
    m.set_scaled_grads(scaler.scale_value());
    REQUIRE(scaler.step(m.sgd));
    scaler.update();
  };
  clean_step();
  clean_step();
  CHECK(scaler.scale_value() == 65536.0);
  CHECK(scaler.state().growth_tracker == 2);
  clean_step();
  CHECK(scaler.scale_value() == 131072.0);
  CHECK(scaler.state().growth_tracker == 0);
  // An overflow in the middle restarts the count.
  clean_step();
  m.set_scaled_grads(scaler.scale_value());
  m.linear->bias.mutable_grad()[0] = std::numeric_limits<float>::infinity();
  CHECK_FALSE(scaler.step(m.sgd));
  scaler.update();
  clean_step();
  clean_step();
  CHECK(scaler.scale_value() == 65536.0);
  CHECK(scaler.state().growth_tracker == 2);
}

TEST_CASE("GradScaler skips undefined gradients of frozen parameters", "[train][amp]") {
  TinyModel m;
  ltfit::GradScaler scaler;
  const auto before = m.snapshot();
  m.linear->weight.mutable_grad() = m.grad_w * scaler.scale_value();  // bias has no grad
  CHECK(scaler.step(m.sgd));
  CHECK(torch::allclose(m.linear->weight.detach(), before[0] - 0.1 * m.grad_w));
  CHECK(torch::equal(m.linear->bias.detach(), before[1]));
  CHECK_FALSE(m.linear->bias.grad().defined());
}

TEST_CASE("GradScaler refuses a second step before update", "[train][amp]") {
  TinyModel m;
  ltfit::GradScaler scaler;
  m.set_scaled_grads(scaler.scale_value());
  scaler.step(m.sgd);
  CHECK_THROWS_AS(scaler.step(m.sgd), std::logic_error);
  scaler.update();
  ltfit::GradScaler fresh;
  CHECK_THROWS_AS(fresh.update(), std::logic_error);
}

TEST_CASE("A disabled GradScaler is the identity", "[train][amp]") {
  TinyModel m;
  ltfit::GradScalerOptions options;
  options.enabled = false;
  ltfit::GradScaler scaler(options);
  const torch::Tensor loss = torch::tensor(0.5f);
  CHECK(scaler.scale(loss).is_same(loss));
  CHECK(scaler.scale_value() == 1.0);
  const auto before = m.snapshot();
  m.set_scaled_grads(1.0);
  CHECK_FALSE(scaler.unscale(m.sgd));
  CHECK(torch::equal(m.linear->weight.grad(), m.grad_w));
  CHECK(scaler.step(m.sgd));
  CHECK(torch::allclose(m.linear->weight.detach(), before[0] - 0.1 * m.grad_w));
  scaler.update();
  CHECK(scaler.scale_value() == 1.0);
}

TEST_CASE("GradScaler state round-trips and rejects bad values", "[train][amp]") {
  ltfit::GradScaler scaler;
  scaler.set_state({1024.0, 7});
  CHECK(scaler.state().scale == 1024.0);
  CHECK(scaler.state().growth_tracker == 7);
  CHECK(scaler.scale_value() == 1024.0);
  CHECK(scaler.scale(torch::tensor(2.0f)).item<double>() == 2048.0);
  ltfit::GradScaler other;
  other.set_state(scaler.state());
  CHECK(other.state().scale == 1024.0);
  CHECK(other.state().growth_tracker == 7);
  CHECK_THROWS_AS(scaler.set_state({0.0, 0}), ltfit::CheckpointError);
  CHECK_THROWS_AS(scaler.set_state({std::numeric_limits<double>::infinity(), 0}),
                  ltfit::CheckpointError);
  CHECK_THROWS_AS(scaler.set_state({8.0, -1}), ltfit::CheckpointError);
}

TEST_CASE("precision names map to dtypes and fp16 on CPU is a config error", "[train][amp]") {
  CHECK(ltfit::precision_dtype(ltfit::parse_precision("fp32")) == torch::kFloat);
  CHECK(ltfit::precision_dtype(ltfit::parse_precision("fp16")) == torch::kHalf);
  CHECK(ltfit::precision_dtype(ltfit::parse_precision("bf16")) == torch::kBFloat16);
  CHECK_THROWS_AS(ltfit::parse_precision("fp8"), ltfit::ConfigError);
  CHECK_NOTHROW(ltfit::check_precision(ltfit::Precision::kFp32, torch::kCPU));
  CHECK_NOTHROW(ltfit::check_precision(ltfit::Precision::kBf16, torch::kCPU));
  try {
    ltfit::check_precision(ltfit::Precision::kFp16, torch::kCPU);
    FAIL("fp16 on CPU was accepted");
  } catch (const ltfit::ConfigError& e) {
    CHECK_THAT(e.what(), Catch::StartsWith("train.precision: fp16 needs a CUDA device"));
    CHECK_FALSE(e.hint().empty());
  }
}

TEST_CASE("cpu_has_native_bf16 agrees with the kernel's CPU flags", "[train][amp]") {
  // /proc/cpuinfo names AVX-512 BF16 "avx512_bf16"; the probe is x86-only and false elsewhere.
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  bool flags_seen = false, avx512_bf16 = false;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    flags_seen = true;
    avx512_bf16 = (line + " ").find(" avx512_bf16 ") != std::string::npos;
    break;
  }
#if defined(__x86_64__)
  if (!flags_seen) {
    WARN("SKIPPED: no /proc/cpuinfo flags line to compare with");
    return;
  }
  CHECK(ltfit::cpu_has_native_bf16() == avx512_bf16);
#else
  (void)flags_seen;
  (void)avx512_bf16;
  CHECK_FALSE(ltfit::cpu_has_native_bf16());
#endif
}

TEST_CASE("AutocastGuard runs conv and linear in bf16 on CPU and restores", "[train][amp]") {
  torch::nn::Linear linear(4, 3);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 2, /*kernel_size=*/3));
  const torch::Tensor x = torch::randn({2, 4});
  const torch::Tensor image = torch::randn({1, 3, 8, 8});
  const auto dtype_before = at::autocast::get_autocast_dtype(at::kCPU);
  REQUIRE_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
  {
    ltfit::AutocastGuard guard(torch::kCPU, torch::kBFloat16);
    CHECK(at::autocast::is_autocast_enabled(at::kCPU));
    CHECK(linear->forward(x).scalar_type() == torch::kBFloat16);
    CHECK(conv->forward(image).scalar_type() == torch::kBFloat16);
  }
  CHECK_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
  CHECK(at::autocast::get_autocast_dtype(at::kCPU) == dtype_before);
  CHECK(linear->forward(x).scalar_type() == torch::kFloat);
  CHECK(conv->forward(image).scalar_type() == torch::kFloat);
}

TEST_CASE("nested AutocastGuards restore the outer state", "[train][amp]") {
  torch::nn::Linear linear(4, 3);
  const torch::Tensor x = torch::randn({2, 4});
  {
    ltfit::AutocastGuard outer(torch::kCPU, torch::kBFloat16);
    {
      ltfit::AutocastGuard inner(torch::kCPU, torch::kHalf);
      CHECK(linear->forward(x).scalar_type() == torch::kHalf);
    }
    CHECK(at::autocast::is_autocast_enabled(at::kCPU));
    CHECK(linear->forward(x).scalar_type() == torch::kBFloat16);
    {
      ltfit::AutocastGuard fp32(torch::kCPU, torch::kFloat);  // a no-op: stays bf16
      CHECK(linear->forward(x).scalar_type() == torch::kBFloat16);
    }
    CHECK(linear->forward(x).scalar_type() == torch::kBFloat16);
  }
  CHECK_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
  CHECK(linear->forward(x).scalar_type() == torch::kFloat);
  ltfit::AutocastGuard none(torch::kCPU, torch::kFloat);
  CHECK_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
}

TEST_CASE("a short bf16 training on CPU reduces the loss", "[train][amp]") {
  ltfit::GradScalerOptions options;
  options.enabled = false;  // bf16 has fp32's range: no loss scaling
  ltfit::GradScaler scaler(options);
  const auto [first, last] = train_tiny(torch::kCPU, torch::kBFloat16, scaler, 20);
  INFO("loss " << first << " -> " << last);
  CHECK(std::isfinite(last));
  CHECK(last < 0.6 * first);
}

TEST_CASE("configure_backends switches deterministic algorithms", "[train][amp]") {
  ltfit::configure_backends(torch::kCPU, /*deterministic=*/true);
  CHECK(at::globalContext().deterministicAlgorithms());
  ltfit::configure_backends(torch::kCPU, /*deterministic=*/false);
  CHECK_FALSE(at::globalContext().deterministicAlgorithms());
}

TEST_CASE("fp16 training with loss scaling on CUDA reduces the loss", "[train][amp][cuda]") {
  REQUIRE(torch::cuda::is_available());
  const torch::Device device(torch::kCUDA, 0);
  CHECK_NOTHROW(ltfit::check_precision(ltfit::Precision::kFp16, device));
  ltfit::GradScaler scaler;
  const auto [first, last] = train_tiny(device, torch::kHalf, scaler, 20);
  INFO("loss " << first << " -> " << last);
  CHECK(last < 0.6 * first);
  CHECK(scaler.scale_value() > 1.0);
  torch::nn::Linear linear(4, 3);
  linear->to(device);
  ltfit::AutocastGuard guard(torch::kCUDA, torch::kHalf);
  CHECK(linear->forward(torch::randn({2, 4}, device)).scalar_type() == torch::kHalf);
}

TEST_CASE("configure_backends sets cuDNN and TF32 on CUDA", "[train][amp][cuda]") {
  REQUIRE(torch::cuda::is_available());
  ltfit::configure_backends(torch::Device(torch::kCUDA, 0), /*deterministic=*/false);
  CHECK(at::globalContext().benchmarkCuDNN());
  CHECK_FALSE(at::globalContext().deterministicCuDNN());
  ltfit::configure_backends(torch::Device(torch::kCUDA, 0), /*deterministic=*/true);
  CHECK_FALSE(at::globalContext().benchmarkCuDNN());
  CHECK(at::globalContext().deterministicCuDNN());
  CHECK(at::globalContext().deterministicAlgorithms());
  ltfit::configure_backends(torch::Device(torch::kCUDA, 0), /*deterministic=*/false);
  CHECK_FALSE(at::globalContext().deterministicAlgorithms());
}
