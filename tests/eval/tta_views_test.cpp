// fastai v1 TTA views: corner geometry on a quadrant image, mirroring, exact output size, and
// parity with crop + bilinear resize where the crop side is a whole number of pixels.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include "ltfit/eval/tta_views.h"

namespace {

constexpr int kViewSide = 32;

// [n,3,S,S] float: top-left 1, top-right 2, bottom-left 3, bottom-right 4.
torch::Tensor quadrant_images(std::int64_t n, std::int64_t side) {
  torch::Tensor x = torch::empty({n, 3, side, side});
  const std::int64_t h = side / 2;
  using torch::indexing::Slice;
  x.index_put_({Slice(), Slice(), Slice(0, h), Slice(0, h)}, 1.0);
  x.index_put_({Slice(), Slice(), Slice(0, h), Slice(h)}, 2.0);
  x.index_put_({Slice(), Slice(), Slice(h), Slice(0, h)}, 3.0);
  x.index_put_({Slice(), Slice(), Slice(h), Slice(h)}, 4.0);
  return x;
}

std::int64_t count_equal(const torch::Tensor& t, double value) {
  return t.sub(value).abs().lt(1e-5).sum().item<std::int64_t>();
}

}  // namespace

TEST_CASE("each v1 view is dominated by its corner and mirrored views mirror", "[eval][tta]") {
  const torch::Tensor x = quadrant_images(2, kViewSide);
  const torch::Tensor views = ltfit::tta_v1_views(x, 1.35);
  REQUIRE(views.sizes() == torch::IntArrayRef({8 * 2, 3, kViewSide, kViewSide}));
  for (int i = 0; i < ltfit::kTtaV1Views; ++i) {
    INFO("view " << i);
    const ltfit::CornerView v = ltfit::tta_v1_view(i);
    CHECK(v.row_pct == (i & 1));
    CHECK(v.col_pct == ((i >> 1) & 1));
    CHECK(v.flip == (i >= 4));
    const torch::Tensor image = views[i * 2];  // first image of view i
    const double corner_value = 1 + v.col_pct + 2 * v.row_pct;
    const std::int64_t dominant = count_equal(image, corner_value);
    CHECK(dominant > image.numel() * 2 / 5);  // (21/32)^2 of the pixels come from that quadrant
    for (double other = 1; other <= 4; ++other) {
      if (other != corner_value) CHECK(count_equal(image, other) < dominant);
    }
    const std::int64_t row = v.row_pct * (kViewSide - 1);
    const std::int64_t col = (v.flip ? 1 - v.col_pct : v.col_pct) * (kViewSide - 1);
    CHECK(image[0][row][col].item<float>() == Approx(corner_value));
    if (v.flip) CHECK(torch::equal(image, views[(i - 4) * 2].flip({2})));
  }
}

TEST_CASE("v1 views keep the exact input size, even and odd", "[eval][tta]") {
  for (const std::int64_t side : {223, 224}) {
    const torch::Tensor x = torch::rand({3, 3, side, side});
    const torch::Tensor views = ltfit::tta_v1_views(x, 1.35);
    CHECK(views.sizes() == torch::IntArrayRef({24, 3, side, side}));
    CHECK(views.scalar_type() == torch::kFloat32);
  }
  const torch::Tensor wide = ltfit::tta_v1_view_images(torch::rand({1, 3, 20, 30}), 1.35, 5);
  CHECK(wide.sizes() == torch::IntArrayRef({1, 3, 20, 30}));
}

// Zoom 2 toward a corner is the quarter crop resized x2 except along the crop's inner edges, where
// the zoom's bilinear taps reach the neighbouring pixels outside the crop (as fastai's affine
// zoom does) and interpolate() clamps to the crop instead: those output lines are left out.
TEST_CASE("a zoom of 1 is the identity and zoom 2 equals crop + bilinear resize", "[eval][tta]") {
  const torch::Tensor x = torch::rand({2, 3, kViewSide, kViewSide});
  CHECK(torch::allclose(ltfit::zoom_toward_corner(x, 1.0, 1, 0), x, 1e-5, 1e-5));
  using torch::indexing::Slice;
  const std::int64_t h = kViewSide / 2;
  for (int row = 0; row < 2; ++row) {
    for (int col = 0; col < 2; ++col) {
      INFO("row " << row << " col " << col);
      const torch::Tensor crop =
          x.index({Slice(), Slice(), Slice(row * h, row * h + h), Slice(col * h, col * h + h)});
      const torch::Tensor expected = torch::nn::functional::interpolate(
          crop, torch::nn::functional::InterpolateFuncOptions()
                    .size(std::vector<std::int64_t>{kViewSide, kViewSide})
                    .mode(torch::kBilinear)
                    .align_corners(false));
      const Slice rows = row == 0 ? Slice(0, kViewSide - 1) : Slice(1, kViewSide);
      const Slice cols = col == 0 ? Slice(0, kViewSide - 1) : Slice(1, kViewSide);
      const torch::Tensor zoomed = ltfit::zoom_toward_corner(x, 2.0, row, col);
      CHECK(torch::allclose(zoomed.index({Slice(), Slice(), rows, cols}),
                            expected.index({Slice(), Slice(), rows, cols}), 1e-4, 1e-5));
      CHECK_FALSE(torch::allclose(zoomed, expected, 1e-4, 1e-5));  // the inner edge differs
    }
  }
}
