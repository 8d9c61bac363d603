// torchvision's RandomResizedCrop box on LibTorch's CPU generator (augment.h).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "ltfit/data/augment.h"

namespace ltfit {

// The draws are torchvision's RandomResizedCrop.get_params, one for one: float32 tensors filled
// by uniform_ (the area fraction, then the log aspect ratio), randint for the position, Python's
// round (half to even: nearbyint) on double products, and the same central fallback.
PixelBox random_resized_box(const ResizedCropDraw& draw, int width, int height) {
  at::Generator gen = at::detail::createCPUGenerator(draw.seed);
  const double area = static_cast<double>(height) * width;
  const torch::Tensor log_ratio =
      torch::log(torch::tensor({draw.ratio[0], draw.ratio[1]}, torch::kFloat));
  const double log_lo = log_ratio[0].item<float>(), log_hi = log_ratio[1].item<float>();
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double fraction =
        torch::empty({1}).uniform_(draw.scale[0], draw.scale[1], gen).item<float>();
    const double aspect = torch::exp(torch::empty({1}).uniform_(log_lo, log_hi, gen)).item<float>();
    const double target = area * fraction;
    const int w = static_cast<int>(std::nearbyint(std::sqrt(target * aspect)));  // half to even
    const int h = static_cast<int>(std::nearbyint(std::sqrt(target / aspect)));
    if (0 < w && w <= width && 0 < h && h <= height) {
      const auto y = torch::randint(0, height - h + 1, {1}, gen).item<std::int64_t>();
      const auto x = torch::randint(0, width - w + 1, {1}, gen).item<std::int64_t>();
      return {static_cast<int>(x), static_cast<int>(y), w, h};
    }
  }
  // Fallback to a central crop of the ratio range's nearest aspect.
  const double in_ratio = static_cast<double>(width) / height;
  const double lo = std::min(draw.ratio[0], draw.ratio[1]);
  const double hi = std::max(draw.ratio[0], draw.ratio[1]);
  int w = width, h = height;
  if (in_ratio < lo) {
    h = static_cast<int>(std::nearbyint(w / lo));
  } else if (in_ratio > hi) {
    w = static_cast<int>(std::nearbyint(h * hi));
  }
  w = std::clamp(w, 1, width);
  h = std::clamp(h, 1, height);
  return {(width - w) / 2, (height - h) / 2, w, h};
}

}  // namespace ltfit
