// fastai v2's batch augmentation on the batch's device; see batch_augment.h.
#include "ltfit/data/batch_augment.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "ltfit/util/random.h"

namespace ltfit {
namespace {

namespace F = torch::nn::functional;

// [N, 3, 3] from nine [N] tensors, row by row (fastai's affine_mat with its last row given).
torch::Tensor matrices(const std::vector<torch::Tensor>& m) {
  return torch::stack({torch::stack({m[0], m[1], m[2]}, 1), torch::stack({m[3], m[4], m[5]}, 1),
                       torch::stack({m[6], m[7], m[8]}, 1)},
                      1);
}

// flip @ rotate @ zoom per image, corrected for an h×w input (fastai's _prepare_mat): [N, 2, 3].
torch::Tensor affine_theta(const BatchAugmentDraw& d, std::int64_t h, std::int64_t w) {
  const torch::Tensor zero = torch::zeros_like(d.flip), one = torch::ones_like(d.flip);
  const torch::Tensor mirror = one - 2 * d.flip;
  const torch::Tensor flip = matrices({mirror, zero, zero, zero, one, zero, zero, zero, one});
  const torch::Tensor theta = d.rotate * (M_PI / 180.0);
  const torch::Tensor rotate =
      matrices({theta.cos(), theta.sin(), zero, -theta.sin(), theta.cos(), zero, zero, zero, one});
  const torch::Tensor s = 1 / d.zoom;
  const torch::Tensor zoom = matrices({s, zero, (1 - s) * (2 * d.zoom_col - 1), zero, s,
                                       (1 - s) * (2 * d.zoom_row - 1), zero, zero, one});
  torch::Tensor mat = flip.matmul(rotate).matmul(zoom);
  mat.select(1, 0).select(1, 1).mul_(static_cast<double>(h) / static_cast<double>(w));
  mat.select(1, 1).select(1, 0).mul_(static_cast<double>(w) / static_cast<double>(h));
  return mat.slice(1, 0, 2);
}

// fastai's find_coeffs(orig, targ): the 8 perspective coefficients per image, [N, 8, 1].
torch::Tensor perspective_coeffs(const torch::Tensor& p1, const torch::Tensor& p2) {
  const torch::Tensor p = p1.select(2, 0).select(1, 0);
  const torch::Tensor zero = torch::zeros_like(p), one = torch::ones_like(p);
  std::vector<torch::Tensor> rows;
  for (int i = 0; i < p1.size(1); ++i) {
    const torch::Tensor x2 = p2.select(1, i).select(1, 0), y2 = p2.select(1, i).select(1, 1);
    const torch::Tensor x1 = p1.select(1, i).select(1, 0), y1 = p1.select(1, i).select(1, 1);
    rows.push_back(torch::stack({x2, y2, one, zero, zero, zero, -x1 * x2, -x1 * y2}));
    rows.push_back(torch::stack({zero, zero, zero, x2, y2, one, -y1 * x2, -y1 * y2}));
  }
  const torch::Tensor a = torch::stack(rows).permute({2, 0, 1});
  const torch::Tensor b = p1.reshape({p1.size(0), 8, 1});
  return torch::linalg_solve(a, b);
}

// The grid bent by each image's perspective warp (fastai's _WarpCoord and apply_perspective).
torch::Tensor warp_grid(const torch::Tensor& grid, const BatchAugmentDraw& d) {
  const torch::Tensor x = d.warp_x, y = d.warp_y;
  const std::int64_t n = x.size(0);
  const torch::Tensor orig =
      torch::tensor({-1.f, -1.f, -1.f, 1.f, 1.f, -1.f, 1.f, 1.f}).view({1, 4, 2}).expand({n, 4, 2});
  const torch::Tensor targ =
      torch::stack({torch::stack({-1 - y, -1 - x}), torch::stack({-1 + y, 1 + x}),
                    torch::stack({1 + y, -1 + x}), torch::stack({1 - y, 1 - x})})
          .permute({2, 0, 1});
  torch::Tensor coeffs = perspective_coeffs(orig, targ).to(grid.device());
  coeffs = torch::cat({coeffs, torch::ones_like(coeffs.slice(1, 0, 1))}, 1).view({n, 3, 3});
  const auto shape = grid.sizes().vec();
  const torch::Tensor coords = grid.reshape({n, -1, 2});
  const torch::Tensor mapped =
      coords.matmul(coeffs.slice(2, 0, 2).transpose(1, 2)) + coeffs.select(2, 2).unsqueeze(1);
  if (mapped.select(2, 2).eq(0).any().item<bool>()) return grid;  // fastai: leave it unwarped
  return (mapped / mapped.select(2, 2).unsqueeze(-1)).slice(2, 0, 2).reshape(shape);
}

// fastai's logit: clamped to (1e-7, 1 - 1e-7).
torch::Tensor fastai_logit(const torch::Tensor& x) {
  return -(1 / x.clamp(1e-7, 1 - 1e-7) - 1).log();
}

void check_draw(const torch::Tensor& images, const BatchAugmentDraw& d, int size) {
  if (images.dim() != 4 || !images.is_floating_point()) {
    throw std::invalid_argument("augment_batch: expected float images [N, C, H, W], got " +
                                std::to_string(images.dim()) + " dimensions");
  }
  if (size < 1) throw std::invalid_argument("augment_batch: size must be positive");
  for (const torch::Tensor* t : {&d.flip, &d.rotate, &d.zoom, &d.zoom_col, &d.zoom_row, &d.warp_x,
                                 &d.warp_y, &d.brightness, &d.contrast}) {
    if (!t->defined() || t->dim() != 1 || t->size(0) != images.size(0)) {
      throw std::invalid_argument("augment_batch: every draw needs one value per image (" +
                                  std::to_string(images.size(0)) + ")");
    }
  }
}

}  // namespace

BatchAugmentDraw draw_batch_augment(const AugmentConfig& config, std::int64_t n,
                                    std::uint64_t seed) {
  std::vector<float> flip(n), rotate(n), zoom(n), col(n), row(n), wx(n), wy(n), bright(n),
      contrast(n);
  const double l = config.max_lighting, warp = config.max_warp, p = config.p_affine;
  for (std::int64_t i = 0; i < n; ++i) {
    // Every value is drawn whether or not it is used, so each depends only on (seed, i).
    SplitMix64 rng(mix_seed(seed, static_cast<std::uint64_t>(i)));
    const auto k = static_cast<std::size_t>(i);
    flip[k] = rng.bernoulli(0.5) && config.flip ? 1.f : 0.f;
    const bool warp_x = rng.bernoulli(p), warp_y = rng.bernoulli(p);
    const double x = rng.uniform(-warp, warp), y = rng.uniform(-warp, warp);
    wx[k] = warp_x && warp > 0 ? static_cast<float>(x) : 0.f;
    wy[k] = warp_y && warp > 0 ? static_cast<float>(y) : 0.f;
    const bool rotated = rng.bernoulli(p);
    const double degrees = rng.uniform(-config.max_rotate, config.max_rotate);
    rotate[k] = rotated && config.max_rotate > 0 ? static_cast<float>(degrees) : 0.f;
    const bool zoomed = rng.bernoulli(p);
    const double scale = rng.uniform(1.0, std::max(config.max_zoom, 1.0));
    col[k] = static_cast<float>(rng.uniform());
    row[k] = static_cast<float>(rng.uniform());
    zoom[k] = zoomed && config.max_zoom > 1 ? static_cast<float>(scale) : 1.f;
    const bool brightened = rng.bernoulli(config.p_lighting);
    const double change = rng.uniform(0.5 * (1 - l), 0.5 * (1 + l));
    bright[k] = brightened && l > 0 ? static_cast<float>(change) : 0.5f;
    const bool contrasted = rng.bernoulli(config.p_lighting);
    const double log_scale = l > 0 && l < 1 ? rng.uniform(std::log1p(-l), -std::log1p(-l)) : 0;
    contrast[k] = contrasted && l > 0 && l < 1 ? static_cast<float>(std::exp(log_scale)) : 1.f;
  }
  const auto t = [](const std::vector<float>& v) { return torch::tensor(v, torch::kFloat32); };
  return {t(flip), t(rotate), t(zoom), t(col), t(row), t(wx), t(wy), t(bright), t(contrast)};
}

torch::Tensor augment_batch(const torch::Tensor& images, const BatchAugmentDraw& draw, int size) {
  check_draw(images, draw, size);
  const std::int64_t n = images.size(0), h = images.size(2), w = images.size(3);
  const torch::Tensor theta = affine_theta(draw, h, w).to(images.device(), images.scalar_type());
  torch::Tensor grid = F::affine_grid(theta, {n, images.size(1), size, size}, true);
  grid = warp_grid(grid, draw);
  torch::Tensor source = images;
  // fastai's _grid_sample: an input over twice the output is first shrunk by area averaging,
  // unless the zoom needs those pixels. As fastai computes it: min(H / grid.shape[-2],
  // W / grid.shape[-1]) / 2, where the grid is [N, size, size, 2], so W is divided by 2 (its
  // coordinate pair) and the height alone decides in practice; kept for parity.
  const double z = 2.0 / (grid.max() - grid.min()).item<double>();
  const double d =
      std::min(static_cast<double>(h) / grid.size(2), static_cast<double>(w) / grid.size(3)) / 2;
  if (d > 1 && d > z) {
    source = F::interpolate(images, F::InterpolateFuncOptions()
                                        .scale_factor(std::vector<double>{1 / d, 1 / d})
                                        .mode(torch::kArea)
                                        .recompute_scale_factor(true));
  }
  torch::Tensor out = F::grid_sample(source, grid,
                                     F::GridSampleFuncOptions()
                                         .mode(torch::kBilinear)
                                         .padding_mode(torch::kReflection)
                                         .align_corners(true));
  const auto per_image = [&](const torch::Tensor& v) {
    return v.to(out.device(), out.scalar_type()).view({n, 1, 1, 1});
  };
  return torch::sigmoid((fastai_logit(out) + fastai_logit(per_image(draw.brightness))) *
                        per_image(draw.contrast));
}

}  // namespace ltfit
