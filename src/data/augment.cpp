// fastai v1 get_transforms() augmentation: the parameter draw, the composed sampling matrix,
// the lighting table and the one-pass operator. See include/ltfit/data/augment.h.
//
// Geometry follows fastai v1 (vision/image.py, vision/transform.py). fastai resamples through a
// flow field of normalized output coordinates p in [-1,1]^2 ((x, y), x along the width): the
// coord transform symmetric_warp (order 4) replaces p by H(p), then the queued affine matrix
// (order 5, rotate then zoom in get_transforms' list order, so R * Z) is applied, and flip_lr
// (a pixel transform, order 10) mirrors the result. So a source point is R * Z * H(flip(p)).
// H is the homography with H(target_i) = corner_i (fastai's _find_coeffs(orig, targ) solves for
// the map from the target points to the original corners and applies it to the grid); with all
// magnitudes 0 the targets are the corners and H is the identity.
//
// One deliberate difference: fastai applies these in the normalized coordinates of the whole
// image resized to shorter side `size` and crops (rand_crop, order 99) afterwards; we apply them
// in the normalized coordinates of the crop square itself and map that square onto the source.
// At the identity both give the same pixels; otherwise rotation, zoom and warp pivot on the
// crop's centre instead of the image's, which keeps more of the crop inside the image.
#include "ltfit/data/augment.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include <torch/torch.h>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "data/decode.h"
#include "data/pil_resample.h"
#include "ltfit/util/random.h"

namespace ltfit {
namespace {

constexpr int kMaxOutputSize = 1 << 14;
// OpenCV's remap (under warpPerspective) holds source coordinates in shorts: a source side must
// stay below SHRT_MAX (32767). Wider or taller images are warped from the part the output
// samples (augment_to_tensor), shrunk further only if that part is itself too large.
constexpr int kMaxWarpSide = 32000;
constexpr double kPi = 3.14159265358979323846;
constexpr double kLogitEps = 1e-7;  // fastai's logit clamp

using Mat3 = std::array<double, 9>;  // row-major 3x3

constexpr Mat3 kIdentity = {1, 0, 0, 0, 1, 0, 0, 0, 1};

Mat3 multiply(const Mat3& a, const Mat3& b) {
  Mat3 c{};
  for (int r = 0; r < 3; ++r) {
    for (int k = 0; k < 3; ++k) {
      for (int col = 0; col < 3; ++col) c[r * 3 + col] += a[r * 3 + k] * b[k * 3 + col];
    }
  }
  return c;
}

// Solves the 8x8 system [a | b] (b in column 8) by Gauss-Jordan elimination with partial
// pivoting; the systems here (four points in general position) are well conditioned.
std::array<double, 8> solve8(std::array<std::array<double, 9>, 8> a) {
  for (int col = 0; col < 8; ++col) {
    int pivot = col;
    for (int r = col + 1; r < 8; ++r) {
      if (std::abs(a[r][col]) > std::abs(a[pivot][col])) pivot = r;
    }
    std::swap(a[col], a[pivot]);
    for (int r = 0; r < 8; ++r) {
      if (r == col) continue;
      const double f = a[r][col] / a[col][col];
      for (int k = col; k < 9; ++k) a[r][k] -= f * a[col][k];
    }
  }
  std::array<double, 8> x{};
  for (int i = 0; i < 8; ++i) x[i] = a[i][8] / a[i][i];
  return x;
}

// The homography taking each from[i] to to[i] (points as (x, y)).
Mat3 homography(const std::array<std::array<double, 2>, 4>& from,
                const std::array<std::array<double, 2>, 4>& to) {
  std::array<std::array<double, 9>, 8> a{};
  for (int i = 0; i < 4; ++i) {
    const double x = from[i][0], y = from[i][1], u = to[i][0], v = to[i][1];
    a[2 * i] = {x, y, 1, 0, 0, 0, -u * x, -u * y, u};
    a[2 * i + 1] = {0, 0, 0, x, y, 1, -v * x, -v * y, v};
  }
  const std::array<double, 8> h = solve8(a);
  return {h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], 1};
}

// fastai v1 symmetric_warp: maps each warped target point back to its corner (see file header).
Mat3 symmetric_warp(const std::array<double, 4>& m) {
  if (m == std::array<double, 4>{0, 0, 0, 0}) return kIdentity;
  const std::array<std::array<double, 2>, 4> corners = {{{-1, -1}, {-1, 1}, {1, -1}, {1, 1}}};
  const std::array<std::array<double, 2>, 4> targets = {
      {{-1 - m[3], -1 - m[1]}, {-1 - m[2], 1 + m[1]}, {1 + m[3], -1 - m[0]}, {1 + m[2], 1 + m[0]}}};
  return homography(targets, corners);
}

// fastai v1 rotate: [[cos, -sin], [sin, cos]] on (x, y) with y pointing down.
Mat3 rotation(double degrees) {
  if (degrees == 0) return kIdentity;
  const double a = degrees * kPi / 180.0;
  return {std::cos(a), -std::sin(a), 0, std::sin(a), std::cos(a), 0, 0, 0, 1};
}

// fastai v1 zoom: shrink the sampled region by 1/scale toward (col_pct, row_pct).
Mat3 zoom(double scale, double row_pct, double col_pct) {
  const double s = 1.0 - 1.0 / scale;
  return {1.0 / scale, 0, s * (2 * col_pct - 1), 0, 1.0 / scale, s * (2 * row_pct - 1), 0, 0, 1};
}

bool is_identity_lighting(const AugmentParams& params) {
  return params.brightness == 0.5 && params.contrast == 1.0;
}

bool finite_params(const AugmentParams& p) {
  const double values[] = {p.crop_row_pct, p.crop_col_pct, p.rotate_degrees, p.zoom,
                           p.zoom_row_pct, p.zoom_col_pct, p.warp[0],        p.warp[1],
                           p.warp[2],      p.warp[3],      p.brightness,     p.contrast,
                           p.decode_zoom};
  return std::all_of(std::begin(values), std::end(values),
                     [](double v) { return std::isfinite(v); });
}

// Why `params` cannot be applied, or "" when they can.
std::string invalid_params_reason(const AugmentParams& p) {
  if (!finite_params(p)) return "augmentation parameters are not all finite";
  if (!(p.zoom > 0)) return "invalid zoom " + std::to_string(p.zoom) + " (expected > 0)";
  if (!(p.brightness > 0 && p.brightness < 1))
    return "invalid brightness " + std::to_string(p.brightness) + " (expected in (0,1))";
  if (!(p.contrast > 0))
    return "invalid contrast " + std::to_string(p.contrast) + " (expected > 0)";
  return "";
}

// Writes RGB (BGR with the channels swapped) through `lut` into `out`: [rows,cols,3] uint8.
void lut_bgr_to_rgb(const cv::Mat& bgr, const std::array<std::uint8_t, 256>& lut,
                    std::uint8_t* out) {
  for (int r = 0; r < bgr.rows; ++r) {
    const std::uint8_t* in = bgr.ptr<std::uint8_t>(r);
    std::uint8_t* dst = out + static_cast<size_t>(r) * bgr.cols * 3;
    for (int c = 0; c < bgr.cols; ++c, in += 3, dst += 3) {
      dst[0] = lut[in[2]];
      dst[1] = lut[in[1]];
      dst[2] = lut[in[0]];
    }
  }
}

// The first and count of the source pixels along an axis of `n` that samples in [lo, hi] read,
// reflected (BORDER_REFLECT_101) at the image's edges, with a margin for the bilinear taps.
std::pair<int, int> sampled_span(double lo, double hi, int n) {
  const double last = n - 1;
  lo -= 2;
  hi += 2;
  if (lo < 0) hi = std::max(hi, -lo);               // reflected back in at 0
  if (hi > last) lo = std::min(lo, 2 * last - hi);  // and at the far edge
  const int first = static_cast<int>(std::clamp(std::floor(lo), 0.0, last));
  const int end = static_cast<int>(std::clamp(std::ceil(hi), 0.0, last));
  return {first, end - first + 1};
}

// The rectangle of the source (cols × rows) that warping through `m` (output pixel -> source
// pixel) to size × size reads: the box around the output square's mapped corners (a
// homography positive on the square maps it onto a convex quadrilateral), reflections included.
// The whole image when the map is not positive on the square.
cv::Rect sampled_region(const Mat3& m, int cols, int rows, int size) {
  double lo_x = HUGE_VAL, hi_x = -HUGE_VAL, lo_y = HUGE_VAL, hi_y = -HUGE_VAL;
  for (const double u : {-1.0, static_cast<double>(size)}) {
    for (const double v : {-1.0, static_cast<double>(size)}) {
      const double w = m[6] * u + m[7] * v + m[8];
      if (!(w > 0)) return {0, 0, cols, rows};
      const double x = (m[0] * u + m[1] * v + m[2]) / w, y = (m[3] * u + m[4] * v + m[5]) / w;
      lo_x = std::min(lo_x, x);
      hi_x = std::max(hi_x, x);
      lo_y = std::min(lo_y, y);
      hi_y = std::max(hi_y, y);
    }
  }
  const auto [x, width] = sampled_span(lo_x, hi_x, cols);
  const auto [y, height] = sampled_span(lo_y, hi_y, rows);
  return {x, y, width, height};
}

// `image` and `m` made warpable when a side reaches kMaxWarpSide: cut to the region the warp
// reads (the same pixels out), then, if that is still too large, shrunk by area averaging.
// Images within the limit are returned as they are, so their pixels never change.
cv::Mat warpable_source(const cv::Mat& image, int size, Mat3& m) {
  if (image.cols < kMaxWarpSide && image.rows < kMaxWarpSide) return image;
  const cv::Rect roi = sampled_region(m, image.cols, image.rows, size);
  m = multiply({1, 0, -static_cast<double>(roi.x), 0, 1, -static_cast<double>(roi.y), 0, 0, 1}, m);
  cv::Mat source = image(roi);
  if (source.cols < kMaxWarpSide && source.rows < kMaxWarpSide) return source;
  const double f = (kMaxWarpSide - 1) / static_cast<double>(std::max(source.cols, source.rows));
  cv::Mat small;
  cv::resize(source, small,
             cv::Size(std::max(1, static_cast<int>(source.cols * f)),
                      std::max(1, static_cast<int>(source.rows * f))),
             0, 0, cv::INTER_AREA);
  const double sx = static_cast<double>(small.cols) / source.cols;
  const double sy = static_cast<double>(small.rows) / source.rows;
  m = multiply({sx, 0, sx / 2 - 0.5, 0, sy, sy / 2 - 0.5, 0, 0, 1}, m);  // pixel centres
  return small;
}

// A size × size BGR image through `params`' lighting into a new RGB [size,size,3] uint8 tensor.
torch::Tensor lit_rgb_tensor(const cv::Mat& bgr, const AugmentParams& params) {
  const int size = bgr.rows;
  torch::Tensor out = torch::empty({size, size, 3}, torch::kUInt8);
  std::uint8_t* data = out.data_ptr<std::uint8_t>();
  if (is_identity_lighting(params)) {
    cv::Mat rgb(size, size, CV_8UC3, data);
    cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
    if (rgb.data != data) std::memcpy(data, rgb.data, static_cast<size_t>(size) * size * 3);
  } else {
    lut_bgr_to_rgb(bgr, lighting_lut(params), data);
  }
  return out;
}

// Resamples the whole decoded image, of which `decoded` holds the part the warp reads, through
// `params` and writes the result into a new tensor.
torch::Tensor augment_to_tensor(const DecodedImage& decoded, int size,
                                const AugmentParams& params) {
  const cv::Size whole = decoded.whole;
  Mat3 m = sampling_matrix(params, whole.width, whole.height, size);
  const double dx = decoded.region.x, dy = decoded.region.y;  // to the decoded part's pixels
  m = multiply({1, 0, -dx, 0, 1, -dy, 0, 0, 1}, m);
  const cv::Mat source = warpable_source(decoded.image, size, m);
  const cv::Mat matrix(3, 3, CV_64F, m.data());
  cv::Mat warped;
  cv::warpPerspective(source, warped, matrix, cv::Size(size, size),
                      cv::INTER_LINEAR | cv::WARP_INVERSE_MAP, opencv_border(params.framing.pad),
                      cv::Scalar::all(0));
  return lit_rgb_tensor(warped, params);
}

// A RandomResizedCrop with no rotation, zoom or warp: resized as torchvision resizes it.
bool plain_resized_crop(const AugmentParams& p) {
  return p.resized_crop && p.rotate_degrees == 0 && p.zoom == 1.0 &&
         p.warp == std::array<double, 4>{0, 0, 0, 0};
}

cv::Rect box_rect(const PixelBox& box) { return {box.x, box.y, box.width, box.height}; }

// torchvision's resized_crop of `box` then hflip on the full-size decode, `decoded` holding it.
torch::Tensor resized_crop_to_tensor(const DecodedImage& decoded, const cv::Rect& box, int size,
                                     const AugmentParams& params) {
  const cv::Mat region = decoded.image(box - decoded.region.tl());
  cv::Mat resized =
      pil_resize_window(region, {size, size}, {0, 0, size, size}, ResampleFilter::kBilinear);
  if (params.flip) {
    cv::Mat mirrored;
    cv::flip(resized, mirrored, 1);
    resized = mirrored;
  }
  return lit_rgb_tensor(resized, params);
}

// The window (x, y, width, height in source pixels) the output square is drawn from.
std::array<double, 4> source_window(const AugmentParams& p, int width, int height) {
  if (p.resized_crop) {
    const PixelBox b = random_resized_box(*p.resized_crop, width, height);
    return {static_cast<double>(b.x), static_cast<double>(b.y), static_cast<double>(b.width),
            static_cast<double>(b.height)};
  }
  if (p.framing.method == ResizeMethod::kSquish) {
    return {0, 0, static_cast<double>(width), static_cast<double>(height)};
  }
  const double side =
      p.framing.method == ResizeMethod::kPad ? std::max(width, height) : std::min(width, height);
  return {std::clamp(p.crop_col_pct, 0.0, 1.0) * (width - side),
          std::clamp(p.crop_row_pct, 0.0, 1.0) * (height - side), side, side};
}

}  // namespace

AugmentParams crop_only(const AugmentParams& params) {
  AugmentParams crop;
  crop.crop_row_pct = params.crop_row_pct;
  crop.crop_col_pct = params.crop_col_pct;
  crop.framing = params.framing;
  crop.resized_crop = params.resized_crop;
  return crop;
}

AugmentParams draw_augment(const AugmentConfig& config, std::uint64_t seed,
                           const Framing& framing) {
  // Draw order (fixed, part of the reproducibility contract): crop row, crop col, flip, warp
  // (apply?, 4 magnitudes), rotate (apply?, degrees), zoom (apply?, scale, row, col),
  // brightness (apply?, change), contrast (apply?, log scale). Every value is drawn whether or
  // not it is used, so each one depends only on the seed, never on the other settings.
  SplitMix64 rng(seed);
  AugmentParams p;
  const double crop_row = rng.uniform();
  const double crop_col = rng.uniform();
  if (config.random_crop) {
    p.crop_row_pct = crop_row;
    p.crop_col_pct = crop_col;
  }  // else the defaults, 0.5: centred
  const bool flip = rng.bernoulli(0.5);
  p.flip = config.flip && flip;

  const bool warp = rng.bernoulli(config.p_affine) && config.max_warp > 0;
  for (double& m : p.warp) {
    const double value = rng.uniform(-config.max_warp, config.max_warp);
    m = warp ? value : 0.0;
  }
  const bool rotate = rng.bernoulli(config.p_affine) && config.max_rotate > 0;
  const double degrees = rng.uniform(-config.max_rotate, config.max_rotate);
  if (rotate) p.rotate_degrees = degrees;

  const bool zoom = rng.bernoulli(config.p_affine) && config.max_zoom > 1;
  const double scale = rng.uniform(1.0, config.max_zoom);
  const double zoom_row = rng.uniform();
  const double zoom_col = rng.uniform();
  p.decode_zoom = std::max(config.max_zoom, 1.0);
  if (zoom) {
    p.zoom = scale;
    p.zoom_row_pct = zoom_row;
    p.zoom_col_pct = zoom_col;
  }

  const double l = config.max_lighting;
  const bool brightness = rng.bernoulli(config.p_lighting) && l > 0;
  const double change = rng.uniform(0.5 * (1 - l), 0.5 * (1 + l));
  if (brightness) p.brightness = change;
  const bool contrast = rng.bernoulli(config.p_lighting) && l > 0 && l < 1;
  const double log_scale = rng.uniform(std::log1p(-l), -std::log1p(-l));
  if (contrast) p.contrast = std::exp(log_scale);

  p.framing = framing;
  const std::uint64_t box_seed = rng.next() >> 1;  // below 2^63, as torch.manual_seed takes it
  if (config.crop == TrainCrop::kRandomResized && config.scale.size() == 2 &&
      config.ratio.size() == 2) {
    p.resized_crop = ResizedCropDraw{
        box_seed, {config.scale[0], config.scale[1]}, {config.ratio[0], config.ratio[1]}};
  }
  return p;
}

std::array<double, 9> sampling_matrix(const AugmentParams& params, int src_width, int src_height,
                                      int size) {
  // Output pixel centre (u, v) -> normalized x = (2u + 1) / size - 1 (flipped: negated).
  const double n = 2.0 / size, flip = params.flip ? -1.0 : 1.0;
  const Mat3 to_normalized = {flip * n, 0, flip * (n / 2 - 1), 0, n, n / 2 - 1, 0, 0, 1};
  // Normalized window coordinates -> source pixel centres: the window (source_window: for crop
  // the square of side min(w, h) at (crop_col_pct * (w - side), crop_row_pct * (h - side))).
  const auto [x0, y0, wx, wy] = source_window(params, src_width, src_height);
  const Mat3 to_source = {wx / 2, 0, x0 + wx / 2 - 0.5, 0, wy / 2, y0 + wy / 2 - 0.5, 0, 0, 1};
  const Mat3 affine = multiply(rotation(params.rotate_degrees),
                               zoom(params.zoom, params.zoom_row_pct, params.zoom_col_pct));
  const Mat3 warp = symmetric_warp(params.warp);
  return multiply(to_source, multiply(affine, multiply(warp, to_normalized)));
}

std::array<std::uint8_t, 256> lighting_lut(const AugmentParams& params) {
  std::array<std::uint8_t, 256> lut{};
  if (is_identity_lighting(params)) {
    for (int v = 0; v < 256; ++v) lut[v] = static_cast<std::uint8_t>(v);
    return lut;
  }
  const auto logit = [](double x) {
    x = std::clamp(x, kLogitEps, 1 - kLogitEps);
    return std::log(x / (1 - x));
  };
  const double shift = logit(params.brightness);
  for (int v = 0; v < 256; ++v) {
    const double t = (logit(v / 255.0) + shift) * params.contrast;
    const double out = 255.0 / (1.0 + std::exp(-t));
    lut[v] = static_cast<std::uint8_t>(std::clamp(std::lround(out), 0L, 255L));
  }
  return lut;
}

std::optional<torch::Tensor> load_augmented_image(const ImageInput& input, int size,
                                                  const AugmentParams& params, std::string* error,
                                                  const ImageLimits& limits, DecodeBudget* budget,
                                                  DecodedImageCache* cache) {
  return run_never_throwing("augment", error, [&](std::string& reason) {
    std::optional<torch::Tensor> result;
    if (size <= 0 || size > kMaxOutputSize) {
      reason = "invalid output size " + std::to_string(size);
    } else if (reason = invalid_params_reason(params); reason.empty()) {
      // Decode as small as possible while the crop keeps >= 1 source pixel per output pixel at
      // the largest zoom the config draws (the same scale every epoch), and only the part the
      // warp reads.
      // A RandomResizedCrop's box is drawn on the full-size image, as torchvision draws it.
      const bool plain = plain_resized_crop(params);
      // plain: the box, drawn once per image size (the JPEG decoder asks for it by the image's
      // size; other formats and cached images do not ask, and it is drawn after the decode).
      std::optional<std::pair<cv::Size, cv::Rect>> drawn;
      const auto box_of = [&params, &drawn](cv::Size whole) {
        if (!drawn || drawn->first != whole) {
          drawn.emplace(
              whole, box_rect(random_resized_box(*params.resized_crop, whole.width, whole.height)));
        }
        return drawn->second;
      };
      const RegionOf region_of = [&params, size, plain, &box_of](cv::Size whole) {
        if (plain) return box_of(whole);
        const Mat3 m = sampling_matrix(params, whole.width, whole.height, size);
        return sampled_region(m, whole.width, whole.height, size);
      };
      const double min_side =
          params.resized_crop ? 0.0 : size * std::max({params.zoom, params.decode_zoom, 1.0});
      const DecodedImage decoded =
          decode_bgr_cached(input, {min_side, region_of}, {limits, budget}, cache, &reason);
      if (!decoded.image.empty()) {
        result = plain ? resized_crop_to_tensor(decoded, box_of(decoded.whole), size, params)
                       : augment_to_tensor(decoded, size, params);
      }
    }
    return result;
  });
}

}  // namespace ltfit
