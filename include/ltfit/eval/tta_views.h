// fastai v1's test-time augmentation views: four corner zooms, each plain and mirrored.
//
// fastai v1 `_tta_only` makes view i (0..7) with zoom(scale, row_pct = i & 1, col_pct = i >> 1 & 1)
// and a horizontal flip when i & 4. Its affine zoom maps an output point p (in [-1,1]) to the
// source point p / scale + (1 - 1/scale) * (2 * pct - 1): the crop of side S/scale anchored at
// the chosen corner, resized back to S. Here that is one affine_grid + grid_sample (bilinear,
// half-pixel centres, border padding) over the whole batch on its device; the output always has
// the input's exact H x W (no 223 vs 224, fastai#1446). Unlike fastai v1 the other training
// transforms are not drawn on top, so the views are deterministic. Pure functions, thread-safe.
#pragma once

#include <torch/types.h>

namespace ltfit {

inline constexpr int kTtaV1Views = 8;  // 4 corners x {plain, mirrored}

// One view's geometry (fastai v1's numbering).
struct CornerView {
  int row_pct = 0;    // 0: top, 1: bottom
  int col_pct = 0;    // 0: left, 1: right
  bool flip = false;  // mirrored left-right after the zoom
};

// The geometry of view `index` in [0, 8).
CornerView tta_v1_view(int index);

// float [N,C,H,W] -> [N,C,H,W] (contiguous NCHW, same dtype and device): each image zoomed
// x`scale` (>= 1) toward the corner (row_pct, col_pct), bilinear.
torch::Tensor zoom_toward_corner(const torch::Tensor& images, double scale, int row_pct,
                                 int col_pct);

// float [N,C,H,W] -> view `index` of every image, [N,C,H,W].
torch::Tensor tta_v1_view_images(const torch::Tensor& images, double scale, int index);

// float [N,C,H,W] -> [8N,C,H,W], view-major: rows [v*N, (v+1)*N) hold view v. For tests and
// small inputs; the TTA loop builds two views at a time to bound memory.
torch::Tensor tta_v1_views(const torch::Tensor& images, double scale);

}  // namespace ltfit
