// fastai v1's corner-zoom TTA views: see tta_views.h.
#include "ltfit/eval/tta_views.h"

#include <string>
#include <vector>

#include "ltfit/util/error.h"

namespace ltfit {

CornerView tta_v1_view(int index) {
  LTFIT_CHECK(index >= 0 && index < kTtaV1Views, "TTA view index out of range");
  return {index & 1, (index >> 1) & 1, (index & 4) != 0};
}

torch::Tensor zoom_toward_corner(const torch::Tensor& images, double scale, int row_pct,
                                 int col_pct) {
  LTFIT_CHECK(images.dim() == 4 && images.is_floating_point(), "images must be float [N,C,H,W]");
  LTFIT_CHECK(scale >= 1.0, "TTA zoom scale must be >= 1");
  const std::int64_t n = images.size(0), c = images.size(1), h = images.size(2), w = images.size(3);
  const double shift = 1.0 - 1.0 / scale;  // fastai v1 _zoom: s * (2 * pct - 1)
  const std::vector<double> affine = {1.0 / scale, 0.0,         shift * (2 * col_pct - 1),
                                      0.0,         1.0 / scale, shift * (2 * row_pct - 1)};
  const torch::Tensor theta = torch::tensor(affine, torch::kFloat64)
                                  .to(images.device(), images.scalar_type())
                                  .view({1, 2, 3});
  // One grid for the whole batch: the same zoom for every image.
  const torch::Tensor grid =
      torch::affine_grid_generator(theta, {1, c, h, w}, /*align_corners=*/false)
          .expand({n, h, w, 2});
  return torch::grid_sampler(images, grid, /*interpolation_mode=*/0, /*padding_mode=*/1,
                             /*align_corners=*/false)
      .contiguous();
}

torch::Tensor tta_v1_view_images(const torch::Tensor& images, double scale, int index) {
  const CornerView view = tta_v1_view(index);
  torch::Tensor zoomed = zoom_toward_corner(images, scale, view.row_pct, view.col_pct);
  return view.flip ? zoomed.flip({3}) : zoomed;
}

torch::Tensor tta_v1_views(const torch::Tensor& images, double scale) {
  std::vector<torch::Tensor> views;
  for (int i = 0; i < kTtaV1Views; ++i) views.push_back(tta_v1_view_images(images, scale, i));
  return torch::cat(views);
}

}  // namespace ltfit
