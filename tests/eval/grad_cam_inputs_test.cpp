// Grad-CAM (eval/grad_cam.h) around the map itself: bf16 against fp32, the model's state left as
// it was, bad inputs refused with a clear error, fp16/bf16 on CUDA ([cuda]); denormalize_images
// and cam_overlay (the pictures predict --cam writes) pixel for pixel.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "eval/grad_cam_fixtures.h"
#include "ltfit/data/loader.h"
#include "ltfit/eval/grad_cam.h"
#include "ltfit/util/error.h"
#include "ltfit/util/precision.h"

using Catch::Matchers::Contains;
using ltfit::testing::cam_scene;
using ltfit::testing::CamScene;

namespace {

// fp32 maps against another precision's: their mean and largest absolute difference.
struct MapGap {
  double mean = 0.0;
  double max = 0.0;
};

MapGap map_gap(const torch::Tensor& a, const torch::Tensor& b) {
  const torch::Tensor d = (a.cpu().to(torch::kFloat64) - b.cpu().to(torch::kFloat64)).abs();
  return {d.mean().item<double>(), d.max().item<double>()};
}

}  // namespace

namespace {

// `precision` under CPU autocast against fp32 on a planted resnet18 (a model whose head was
// fitted: a random head's map is a sum of many terms that cancel, which rounding swamps). The maps,
// scaled to [0, 1], must stay within mean 0.01 and largest 0.05; the gap is printed (WARN).
void check_close_to_fp32_on_cpu(ltfit::Precision precision) {
  ltfit::Classifier model = ltfit::testing::planted_model("resnet18", ltfit::HeadKind::kLinear);
  const CamScene scene = cam_scene(4, /*every=*/2, /*seed=*/10);
  const torch::Tensor classes = torch::tensor({1, 1, 0, 1}, torch::kInt64);
  const torch::Tensor fp32 = ltfit::grad_cam(model, scene.images, classes, ltfit::EvalOptions{});
  ltfit::EvalOptions reduced;
  reduced.precision = precision;
  const torch::Tensor half = ltfit::grad_cam(model, scene.images, classes, reduced);
  CHECK(half.scalar_type() == torch::kFloat32);
  CHECK(torch::isfinite(half).all().item<bool>());
  const MapGap gap = map_gap(fp32, half);
  WARN(ltfit::precision_name(precision)
       << " against fp32 on the CPU: mean difference " << gap.mean << ", largest " << gap.max);
  CHECK(gap.mean < 0.01);
  CHECK(gap.max < 0.05);
  CHECK_FALSE(torch::equal(fp32, half));  // the reduced precision did run
}

}  // namespace

// bf16 rounds the body's activations to 8 bits of mantissa (~0.4 %): measured mean 0.0015,
// largest 0.0096.
TEST_CASE("grad_cam: bf16 on the CPU is close to fp32", "[grad_cam]") {
  check_close_to_fp32_on_cpu(ltfit::Precision::kBf16);
}

// fp16 autocast on the CPU: the product runs fp32 there (resolve_eval_precision), but grad_cam
// itself takes any precision, and this runs its fp16 path (the map kept in float32, the head's
// gradient through half activations) where no GPU is lent. fp16 keeps 10 bits of mantissa, more
// than bf16's 7: measured mean 1.8e-4, largest 1.3e-3. On CUDA: the [cuda] case below.
TEST_CASE("grad_cam: fp16 autocast on the CPU is close to fp32", "[grad_cam]") {
  check_close_to_fp32_on_cpu(ltfit::Precision::kFp16);
}

TEST_CASE("grad_cam: parameters keep requires_grad and grads, the model ends in eval mode",
          "[grad_cam]") {
  ltfit::Classifier model = ltfit::testing::settled_model("resnet18", 2, ltfit::HeadKind::kFastai);
  const auto groups = model->layer_group_parameters();
  for (auto p : groups[0]) p.requires_grad_(false);  // a frozen stem, as in fine_tune's first phase
  torch::Tensor marked = groups[2].front();
  marked.mutable_grad() = torch::full_like(marked, 3.0f);  // a gradient left by a training step
  std::vector<bool> required_grad;
  for (const auto& p : model->parameters()) required_grad.push_back(p.requires_grad());
  model->train();
  {
    torch::NoGradGuard caller_without_grad;  // as predict calls it
    const CamScene scene = cam_scene(2, /*every=*/1, /*seed=*/12);
    const torch::Tensor maps =
        ltfit::grad_cam(model, scene.images, torch::ones({2}, torch::kInt64), ltfit::EvalOptions{});
    CHECK(maps.amax().item<float>() == Approx(1.0f));
  }
  CHECK_FALSE(model->is_training());
  std::size_t i = 0, with_grad = 0;
  for (const auto& p : model->parameters()) {
    CHECK(p.requires_grad() == required_grad[i++]);
    if (p.grad().defined()) ++with_grad;
  }
  CHECK(with_grad == 1);
  CHECK(torch::equal(marked.grad(), torch::full_like(marked, 3.0f)));
}

TEST_CASE("grad_cam: bad images, classes or batch sizes are refused with ConfigError",
          "[grad_cam]") {
  ltfit::Classifier model = ltfit::testing::settled_model("resnet18", 2, ltfit::HeadKind::kLinear);
  const torch::Tensor images = cam_scene(2, /*every=*/1, /*seed=*/14).images;
  const torch::Tensor ones = torch::ones({2}, torch::kInt64);
  const ltfit::EvalOptions options;
  const auto refused = [&](const torch::Tensor& x, const torch::Tensor& c, int batch,
                           const std::string& message) {
    INFO(message);
    CHECK_THROWS_AS(ltfit::grad_cam(model, x, c, options, batch), ltfit::ConfigError);
    CHECK_THROWS_WITH(ltfit::grad_cam(model, x, c, options, batch), Contains(message));
  };
  refused(images[0], ones, 0, "grad_cam: expected float images [N,3,H,W], got [3, 128, 160]");
  refused(images.narrow(1, 0, 1), ones, 0, "expected float images [N,3,H,W], got [2, 1, 128");
  refused(images.to(torch::kUInt8), ones, 0, "expected float images [N,3,H,W]");
  refused(images, torch::ones({3}, torch::kInt64), 0,
          "expected one integer class per image ([2]), got [3]");
  refused(images, torch::ones({2}, torch::kFloat32), 0, "expected one integer class per image");
  refused(images, torch::ones({2, 1}, torch::kInt64), 0, "expected one integer class per image");
  refused(images, torch::tensor({1, 2}, torch::kInt64), 0,
          "grad_cam: class 2 of image 1 is out of range: the model has 2 classes (0..1)");
  refused(images, torch::tensor({-1, 0}, torch::kInt64), 0, "class -1 of image 0 is out of range");
  refused(images, ones, -1, "grad_cam: batch size must be >= 0, got -1");
  CHECK_THROWS_AS(ltfit::grad_cam(model, torch::Tensor(), ones, options), ltfit::ConfigError);
}

TEST_CASE("denormalize_images undoes normalize_images exactly", "[grad_cam]") {
  const CamScene scene = cam_scene(3, /*every=*/2, /*seed=*/16);
  ltfit::ImageNormalization other;  // any mean/std round-trips, not only ImageNet's
  other.mean = {0.5f, 0.25f, 0.75f};
  other.std = {0.5f, 0.1f, 0.3f};
  for (const auto& n : {ltfit::ImageNormalization{}, other}) {
    const torch::Tensor x = ltfit::normalize_images(scene.pixels, torch::kCPU, false, n);
    const torch::Tensor back = ltfit::denormalize_images(x, n);
    CHECK(back.scalar_type() == torch::kUInt8);
    CHECK(back.sizes() == scene.pixels.sizes());
    CHECK(torch::equal(back, scene.pixels));
    // Channels-last batches give the same pixels.
    CHECK(
        torch::equal(ltfit::denormalize_images(x.contiguous(torch::MemoryFormat::ChannelsLast), n),
                     scene.pixels));
  }
  // Values beyond the pixel range are clamped, not wrapped.
  const torch::Tensor extreme = torch::tensor({-100.0f, 100.0f, 0.0f}).view({1, 3, 1, 1});
  const torch::Tensor px = ltfit::denormalize_images(extreme, other);
  CHECK(px[0][0][0][0].item<int>() == 0);
  CHECK(px[0][0][0][1].item<int>() == 255);
  CHECK(px[0][0][0][2].item<int>() == 191);  // 0.75 * 255 = 191.25
  CHECK_THROWS_AS(ltfit::denormalize_images(scene.pixels, other), ltfit::ConfigError);
}

TEST_CASE("cam_overlay blends the jet colours of the map into the image", "[grad_cam]") {
  // Jet: 0 dark blue (0,0,128), 0.5 green with half red and blue (128,255,128), 1 dark red.
  const torch::Tensor jet = ltfit::jet_colors(torch::tensor({0.0f, 0.5f, 1.0f, -1.0f, 2.0f}));
  CHECK(torch::allclose(jet, torch::tensor({0.0f, 0.0f, 0.5f, 0.5f, 1.0f, 0.5f, 0.5f, 0.0f, 0.0f,
                                            0.0f, 0.0f, 0.5f, 0.5f, 0.0f, 0.0f})
                                 .view({5, 3})));
  const torch::Tensor rgb = torch::full({1, 3, 3}, 200, torch::kUInt8);
  const torch::Tensor cam = torch::tensor({0.0f, 0.5f, 1.0f}).view({1, 3});
  CHECK(torch::equal(ltfit::cam_overlay(rgb, cam, 0.0), rgb));
  const torch::Tensor full = ltfit::cam_overlay(rgb, cam, 1.0);
  CHECK(torch::equal(
      full, torch::tensor({0, 0, 128, 128, 255, 128, 128, 0, 0}, torch::kUInt8).view({1, 3, 3})));
  const torch::Tensor half = ltfit::cam_overlay(rgb, cam);  // alpha 0.5: (200 + jet) / 2
  CHECK(torch::equal(
      half,
      torch::tensor({100, 100, 164, 164, 228, 164, 164, 100, 100}, torch::kUInt8).view({1, 3, 3})));
  CHECK_THROWS_AS(ltfit::cam_overlay(rgb, cam.view({3, 1})), ltfit::ConfigError);
  CHECK_THROWS_WITH(ltfit::cam_overlay(rgb, cam.view({3, 1})),
                    Contains("expected a float map [1,3] (the image's size), got [3, 1]"));
  CHECK_THROWS_AS(ltfit::cam_overlay(rgb.to(torch::kFloat32), cam), ltfit::ConfigError);
  CHECK_THROWS_AS(ltfit::cam_overlay(rgb, cam, 1.5), ltfit::ConfigError);
}

// The CPU's tolerances for bf16 (above), for fp32 (cuDNN may use TF32), fp16 and bf16 on a GPU.
TEST_CASE("grad_cam on CUDA: fp16 and bf16 close to the CPU's fp32, channels-last",
          "[grad_cam][cuda]") {
  REQUIRE(torch::cuda::is_available());
  ltfit::Classifier model = ltfit::testing::planted_model("resnet18", ltfit::HeadKind::kLinear);
  const CamScene scene = cam_scene(6, /*every=*/2, /*seed=*/18);
  const torch::Tensor classes = torch::tensor({1, 0, 1, 1, 0, 1}, torch::kInt64);
  const torch::Tensor cpu = ltfit::grad_cam(model, scene.images, classes, ltfit::EvalOptions{});
  const torch::Device gpu(torch::kCUDA, 0);
  model->to(gpu);
  ltfit::EvalOptions options;
  options.device = gpu;
  const MapGap fp32 = map_gap(cpu, ltfit::grad_cam(model, scene.images, classes, options));
  CHECK(fp32.mean < 0.01);
  CHECK(fp32.max < 0.05);
  std::vector<ltfit::Precision> precisions{ltfit::Precision::kFp16};
  try {
    ltfit::check_precision(ltfit::Precision::kBf16, gpu);  // compute capability >= 8.0
    precisions.push_back(ltfit::Precision::kBf16);
  } catch (const ltfit::ConfigError&) {
    WARN("bf16 skipped: the GPU's compute capability is below 8.0");
  }
  ltfit::set_channels_last(model);
  options.channels_last = true;
  for (const auto precision : precisions) {
    options.precision = precision;
    const torch::Tensor maps =
        ltfit::grad_cam(model, scene.images.to(gpu), classes.to(gpu), options, 4);
    CHECK(maps.device().is_cpu());
    const MapGap gap = map_gap(cpu, maps);
    WARN(ltfit::precision_name(precision) << " on CUDA against fp32 on the CPU: mean difference "
                                          << gap.mean << ", largest " << gap.max);
    CHECK(gap.mean < 0.01);
    CHECK(gap.max < 0.05);
  }
}
