// Grad-CAM's map (eval/grad_cam.h): it points at planted evidence (one model of each family;
// EfficientNet on larger scenes, see below), equals CAM's closed form through a linear head and the
// logit's finite differences through fastai's head, and does not depend on batching or
// channels-last. Precision, the model's state, bad inputs and the pictures:
// grad_cam_inputs_test.cpp.
//
// The planted scenes: 128 x 160 noise (every channel uniform in 96..159) where a class-1 image has
// a bright 64 px checkerboard at a random place. The models are randomly initialised (no weights
// can be downloaded): their BatchNorm statistics are settled on such scenes, then only the head
// is fitted on the frozen body's feature maps, so the evidence the head uses is where the body's
// features respond to the patch.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "eval/grad_cam_fixtures.h"
#include "ltfit/eval/grad_cam.h"
#include "ltfit/model/classifier.h"

using ltfit::testing::cam_peak;
using ltfit::testing::cam_scene;
using ltfit::testing::CamScene;
using ltfit::testing::planted_model;

namespace {

constexpr std::int64_t kPlantedScenes = 20;

// The share of `scene`'s patches inside which the map of image (i + shift) % N peaks: shift 0
// asks whether each map points at its own image's patch; another shift gives the share a map
// that ignored the patch would reach (its usual place, e.g. the middle, against other patches).
double share_peaking_in_patch(const torch::Tensor& maps, const CamScene& scene,
                              std::int64_t shift) {
  const auto n = static_cast<std::int64_t>(scene.corners.size());
  int hits = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto [y0, x0] = scene.corners[static_cast<std::size_t>(i)];
    const auto [y, x] = cam_peak(maps[(i + shift) % n]);
    const auto p = static_cast<double>(scene.geometry.patch);
    if (y >= y0 && y < y0 + p && x >= x0 && x < x0 + p) ++hits;
  }
  return static_cast<double>(hits) / static_cast<double>(n);
}

// A planted model of `arch` with a `head` head, on 20 new scenes with a patch each: the class-1
// map peaks inside the patch in at least `required` of them, clearly more often than inside the
// next scene's patch (so the map follows the patch, not a place of its own), and the class-0 map
// (the evidence for "noise only") rarely does. The figures are reported either way.
void check_peaks_in_patch(const std::string& arch, ltfit::HeadKind head, double required,
                          ltfit::testing::CamGeometry geometry = {}) {
  const auto start = std::chrono::steady_clock::now();
  ltfit::Classifier model = planted_model(arch, head, geometry);
  const CamScene test = cam_scene(kPlantedScenes, /*every=*/1, /*seed=*/99, geometry);
  // Each scene twice: explaining class 1, then class 0.
  const torch::Tensor classes = torch::cat({torch::ones({kPlantedScenes}, torch::kInt64),
                                            torch::zeros({kPlantedScenes}, torch::kInt64)});
  const torch::Tensor maps = ltfit::grad_cam(model, torch::cat({test.images, test.images}), classes,
                                             ltfit::EvalOptions{}, /*batch_size=*/10);
  const torch::Tensor class1 = maps.narrow(0, 0, kPlantedScenes);
  const double own = share_peaking_in_patch(class1, test, 0);
  const double other = share_peaking_in_patch(class1, test, 1);
  const double class0 =
      share_peaking_in_patch(maps.narrow(0, kPlantedScenes, kPlantedScenes), test, 0);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  WARN(arch << " (" << (head == ltfit::HeadKind::kLinear ? "linear" : "fastai") << " head, "
            << geometry.height << " x " << geometry.width << " scenes, " << geometry.patch
            << " px patch, " << seconds << " s): the class-1 map peaks inside the patch in "
            << own * 100 << " % of 20 scenes (required: " << required * 100
            << " %), inside the next scene's in " << other * 100
            << " %; the class-0 map inside the patch in " << class0 * 100 << " %");
  CHECK(maps.sizes() == torch::IntArrayRef({2 * kPlantedScenes, geometry.height, geometry.width}));
  CHECK(own >= required);
  CHECK(own - other >= 0.25);
  CHECK(class0 <= 0.25);
}

}  // namespace

// Measured with these seeds (own patch / next scene's / class 0): see the WARN lines. Three other
// sets of 40 scenes (before the linear head started from zero, which PyTorch's small default start
// hardly changes) gave resnet18 70-83 % / 35-58 % / 3-8 %, resnext50_32x4d 75-90 % / 38-50 % /
// 0-15 %, convnext_tiny 100 % / 30-45 % / 0 %: the patch covers the middle of most scenes, which
// a random body favours. EfficientNet needs larger scenes (below).
TEST_CASE("grad_cam: the map peaks inside the planted patch - resnet18", "[grad_cam]") {
  check_peaks_in_patch("resnet18", ltfit::HeadKind::kLinear, 0.75);
}

TEST_CASE("grad_cam: the map peaks inside the planted patch - resnext50_32x4d", "[grad_cam]") {
  check_peaks_in_patch("resnext50_32x4d", ltfit::HeadKind::kLinear, 0.8);
}

TEST_CASE("grad_cam: the map peaks inside the planted patch - wide_resnet50_2", "[grad_cam]") {
  check_peaks_in_patch("wide_resnet50_2", ltfit::HeadKind::kLinear, 0.8);
}

TEST_CASE("grad_cam: the map peaks inside the planted patch - convnext_tiny", "[grad_cam]") {
  check_peaks_in_patch("convnext_tiny", ltfit::HeadKind::kLinear, 0.9);
}

// A random efficientnet_b0 spreads the patch's effect over some 150 px (five stages of 3 x 3 and
// 5 x 5 depthwise kernels, whose fan-out initialisation and settled BatchNorm weigh a kernel's
// places alike): on 128 x 160 scenes that is most of the 4 x 5 map, and the map peaks inside a
// 64 px patch in 45-60 % of them (initialisation seeds 1, 5, 7); on 256 x 320 scenes with a 96 px
// patch in 60-85 %; on 384 x 480 scenes (a 12 x 15 map) with a 128 px patch in 90-95 %, and the
// next scene's patch or the class-0 map in at most 10 % (torchvision's model in Python: the same).
TEST_CASE("grad_cam: the map peaks inside the planted patch - efficientnet_b0", "[grad_cam]") {
  check_peaks_in_patch("efficientnet_b0", ltfit::HeadKind::kLinear, 0.8,
                       {.height = 384, .width = 480, .patch = 128});
}

TEST_CASE("grad_cam: the map peaks inside the planted patch - convnext_tiny with fastai's head",
          "[grad_cam]") {
  check_peaks_in_patch("convnext_tiny", ltfit::HeadKind::kFastai, 0.9);
}

namespace {

// Grad-CAM from channel weights `alpha` [N,C] and feature maps [N,C,h,w]: ReLU(sum_c alpha_c
// maps_c), bilinearly resized to H x W, divided by each map's maximum.
torch::Tensor reference_cam(const torch::Tensor& alpha, const torch::Tensor& maps) {
  namespace F = torch::nn::functional;
  torch::Tensor cam = torch::relu((alpha.unsqueeze(-1).unsqueeze(-1) * maps).sum(1, true));
  cam = F::interpolate(cam, F::InterpolateFuncOptions()
                                .size(std::vector<std::int64_t>{ltfit::testing::kCamHeight,
                                                                ltfit::testing::kCamWidth})
                                .mode(torch::kBilinear)
                                .align_corners(false))
            .squeeze(1);
  return cam / cam.flatten(1).amax(1).view({-1, 1, 1});
}

torch::Tensor body_maps(ltfit::Classifier& model, const torch::Tensor& images) {
  torch::NoGradGuard no_grad;
  return model->features(images);
}

}  // namespace

// A linear head is avgpool + (dropout) + fc: d logit_k / d maps_c,ij = W[k,c] / hw at every place,
// so Grad-CAM is CAM (Zhou et al. 2016): ReLU(sum_c W[k,c] maps_c), up to the 1/hw the scaling
// removes.
TEST_CASE(
    "grad_cam: through a linear head the map is CAM's closed form - resnet18 and efficientnet_b0",
    "[grad_cam]") {
  for (const std::string arch : {"resnet18", "efficientnet_b0"}) {
    INFO(arch);
    ltfit::Classifier model = ltfit::testing::settled_model(arch, 3, ltfit::HeadKind::kLinear);
    const CamScene scene = cam_scene(4, /*every=*/2, /*seed=*/4);
    const torch::Tensor classes = torch::tensor({0, 2, 1, 2}, torch::kInt64);
    const torch::Tensor maps = ltfit::grad_cam(model, scene.images, classes, ltfit::EvalOptions{});
    torch::Tensor weight;  // the classifier's [3, C] matrix: the head group's one 2-D parameter
    const auto groups = model->layer_group_parameters();
    for (const auto& p : groups.back())
      if (p.dim() == 2) weight = p.detach();
    REQUIRE(weight.defined());
    const torch::Tensor expected =
        reference_cam(weight.index_select(0, classes), body_maps(model, scene.images));
    CHECK(maps.scalar_type() == torch::kFloat32);
    CHECK(maps.device().is_cpu());
    CHECK(maps.amax().item<float>() == Approx(1.0f));
    CHECK(torch::allclose(maps, expected, /*rtol=*/1e-4, /*atol=*/1e-5));
  }
}

// Through fastai's head (concat pooling, BatchNorm1d, two linears) the channel weights are
// checked against the logit's central differences: adding e to a whole channel c changes the
// logit by e * hw * alpha_c (the max pool keeps its place, so the difference is exact up to the
// head's ReLU, which so small a step does not cross).
TEST_CASE("grad_cam: through fastai's head the weights are the logit's finite differences",
          "[grad_cam]") {
  for (const std::string arch : {"resnet18", "efficientnet_b0"}) {
    INFO(arch);
    ltfit::Classifier model = ltfit::testing::settled_model(arch, 2, ltfit::HeadKind::kFastai);
    const CamScene scene = cam_scene(1, /*every=*/1, /*seed=*/6);
    const torch::Tensor cam =
        ltfit::grad_cam(model, scene.images, torch::ones({1}, torch::kInt64), ltfit::EvalOptions{});
    const torch::Tensor maps = body_maps(model, scene.images);  // [1,C,h,w]
    const std::int64_t channels = maps.size(1);
    constexpr float kStep = 1e-2f;
    std::vector<torch::Tensor> alpha;
    torch::NoGradGuard no_grad;
    for (std::int64_t c0 = 0; c0 < channels; c0 += 128) {  // 128 channels' +-e maps at once
      const std::int64_t count = std::min<std::int64_t>(128, channels - c0);
      const torch::Tensor step =
          torch::eye(channels).narrow(0, c0, count).view({count, channels, 1, 1}) * kStep;
      const torch::Tensor up = model->classify(maps + step).select(1, 1);
      const torch::Tensor down = model->classify(maps - step).select(1, 1);
      alpha.push_back((up - down).to(torch::kFloat64) /
                      (2.0 * kStep * maps.size(2) * maps.size(3)));
    }
    const torch::Tensor expected =
        reference_cam(torch::cat(alpha).view({1, channels}), maps.to(torch::kFloat64));
    CHECK(torch::allclose(cam.to(torch::kFloat64), expected, /*rtol=*/0, /*atol=*/2e-3));
  }
}

TEST_CASE("grad_cam: one batch, batches of 2 and one image at a time agree - channels-last too",
          "[grad_cam]") {
  ltfit::Classifier model = ltfit::testing::settled_model("resnet18", 2, ltfit::HeadKind::kFastai);
  const CamScene scene = cam_scene(5, /*every=*/2, /*seed=*/8);
  const torch::Tensor classes = torch::tensor({1, 0, 1, 1, 0}, torch::kInt64);
  const ltfit::EvalOptions fp32;
  const torch::Tensor whole = ltfit::grad_cam(model, scene.images, classes, fp32);
  CHECK(whole.sizes() == torch::IntArrayRef({5, 128, 160}));
  CHECK(torch::allclose(ltfit::grad_cam(model, scene.images, classes, fp32, 2), whole, 1e-4, 1e-5));
  for (std::int64_t i = 0; i < 5; ++i) {
    INFO("image " << i);
    const torch::Tensor one =
        ltfit::grad_cam(model, scene.images.narrow(0, i, 1), classes.narrow(0, i, 1), fp32);
    CHECK(torch::allclose(one[0], whole[i], 1e-4, 1e-5));
  }
  ltfit::set_channels_last(model);
  ltfit::EvalOptions nhwc;
  nhwc.channels_last = true;
  const torch::Tensor nhwc_maps = ltfit::grad_cam(model, scene.images, classes, nhwc, 3);
  // Other convolution kernels: measured 3e-5 at most.
  CHECK(torch::allclose(nhwc_maps, whole, /*rtol=*/0, /*atol=*/2e-4));
}
