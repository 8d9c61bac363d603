// Tests of fastai-style training augmentation: the seeded parameter draw (determinism, ranges,
// application frequencies), the composed sampling matrix (identity = centre crop, flip, rotation,
// zoom, warp direction), the lighting table, and the one-pass loader (shapes, RGB order,
// failures as nullopt plus a reason).
#include "ltfit/data/augment.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <vector>

#include <torch/torch.h>
#include <catch2/catch.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "support/test_support.h"

namespace fs = std::filesystem;
using ltfit::AugmentConfig;
using ltfit::AugmentParams;
using ltfit::testing::TempDir;
using ltfit::testing::write_file;

namespace {

// A smooth BGR image (gradients plus a slow wave) so resampling differences stay small.
cv::Mat smooth_image(int width, int height) {
  cv::Mat image(height, width, CV_8UC3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const double wave = 40 * std::sin(x * 0.05) * std::cos(y * 0.04);
      image.at<cv::Vec3b>(y, x) = cv::Vec3b(cv::saturate_cast<uchar>(60 + 120.0 * x / width),
                                            cv::saturate_cast<uchar>(128 + wave),
                                            cv::saturate_cast<uchar>(60 + 120.0 * y / height));
    }
  }
  return image;
}

std::string write_image(const fs::path& path, const cv::Mat& image) {
  REQUIRE(cv::imwrite(path.string(), image));
  return path.string();
}

torch::Tensor load_with(const std::string& path, int size, const AugmentParams& params) {
  std::string error;
  auto tensor = ltfit::load_augmented_image(path, size, params, &error);
  INFO(error);
  REQUIRE(tensor.has_value());
  return *tensor;
}

// A [H,W,3] uint8 RGB tensor as a BGR cv::Mat (a copy).
cv::Mat to_bgr(const torch::Tensor& t) {
  const cv::Mat rgb(static_cast<int>(t.size(0)), static_cast<int>(t.size(1)), CV_8UC3,
                    t.data_ptr<std::uint8_t>());
  cv::Mat bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  return bgr;
}

double max_abs_diff(const cv::Mat& a, const cv::Mat& b) {
  double max_value = 0;
  cv::minMaxLoc(cv::abs(a - b) + cv::abs(b - a), nullptr, &max_value);
  return max_value;
}

double mean_abs_diff(const cv::Mat& a, const cv::Mat& b) {
  const cv::Scalar mean = cv::mean(cv::abs(a - b) + cv::abs(b - a));
  return (mean[0] + mean[1] + mean[2]) / 3;
}

// Applies a 3x3 row-major homogeneous matrix to (x, y).
std::array<double, 2> apply(const std::array<double, 9>& m, double x, double y) {
  const double w = m[6] * x + m[7] * y + m[8];
  return {(m[0] * x + m[1] * y + m[2]) / w, (m[3] * x + m[4] * y + m[5]) / w};
}

bool same_params(const AugmentParams& a, const AugmentParams& b) {
  return a.crop_row_pct == b.crop_row_pct && a.crop_col_pct == b.crop_col_pct && a.flip == b.flip &&
         a.rotate_degrees == b.rotate_degrees && a.zoom == b.zoom &&
         a.zoom_row_pct == b.zoom_row_pct && a.zoom_col_pct == b.zoom_col_pct && a.warp == b.warp &&
         a.brightness == b.brightness && a.contrast == b.contrast;
}

}  // namespace

TEST_CASE("draw_augment: same seed gives the same parameters, another seed others",
          "[augment][data]") {
  const AugmentConfig config;
  CHECK(same_params(ltfit::draw_augment(config, 42), ltfit::draw_augment(config, 42)));
  int differing = 0;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    differing +=
        !same_params(ltfit::draw_augment(config, seed), ltfit::draw_augment(config, seed + 1000));
  }
  CHECK(differing == 20);
}

TEST_CASE("draw_augment: 10,000 draws stay in range at fastai's frequencies", "[augment][data]") {
  const AugmentConfig c;  // fastai defaults
  constexpr int kDraws = 10000;
  int flips = 0, warps = 0, rotations = 0, zooms = 0, brightness = 0, contrast = 0;
  for (int i = 0; i < kDraws; ++i) {
    const AugmentParams p = ltfit::draw_augment(c, 7000 + i);
    REQUIRE(p.crop_row_pct >= 0);
    REQUIRE(p.crop_row_pct < 1);
    REQUIRE(p.crop_col_pct >= 0);
    REQUIRE(p.crop_col_pct < 1);
    for (double m : p.warp) REQUIRE(std::abs(m) <= c.max_warp);
    REQUIRE(std::abs(p.rotate_degrees) <= c.max_rotate);
    REQUIRE(p.zoom >= 1);
    REQUIRE(p.zoom <= c.max_zoom);
    REQUIRE(p.zoom_row_pct >= 0);
    REQUIRE(p.zoom_row_pct <= 1);
    REQUIRE(p.zoom_col_pct >= 0);
    REQUIRE(p.zoom_col_pct <= 1);
    REQUIRE(p.brightness >= 0.5 * (1 - c.max_lighting));
    REQUIRE(p.brightness <= 0.5 * (1 + c.max_lighting));
    REQUIRE(p.contrast >= 1 - c.max_lighting - 1e-12);
    REQUIRE(p.contrast <= 1 / (1 - c.max_lighting) + 1e-12);
    flips += p.flip;
    warps += p.warp != std::array<double, 4>{0, 0, 0, 0};
    rotations += p.rotate_degrees != 0;
    zooms += p.zoom != 1;
    brightness += p.brightness != 0.5;
    contrast += p.contrast != 1;
  }
  CHECK(flips / double(kDraws) == Approx(0.5).margin(0.03));
  CHECK(warps / double(kDraws) == Approx(0.75).margin(0.03));
  CHECK(rotations / double(kDraws) == Approx(0.75).margin(0.03));
  CHECK(zooms / double(kDraws) == Approx(0.75).margin(0.03));
  CHECK(brightness / double(kDraws) == Approx(0.75).margin(0.03));
  CHECK(contrast / double(kDraws) == Approx(0.75).margin(0.03));
}

TEST_CASE("draw_augment: disabled transforms keep their identity values", "[augment][data]") {
  AugmentConfig c;
  c.flip = false;
  c.max_rotate = 0;
  c.max_zoom = 1;
  c.max_lighting = 0;
  c.max_warp = 0;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    AugmentParams p = ltfit::draw_augment(c, seed);
    p.crop_row_pct = p.crop_col_pct = 0.5;  // the random crop stays on
    REQUIRE(same_params(p, AugmentParams{}));
  }
  // p = 0 disables too, and leaves the crop values as with the defaults (fixed draw order).
  AugmentConfig never;
  never.p_affine = never.p_lighting = 0;
  const AugmentParams p = ltfit::draw_augment(never, 5);
  CHECK(p.rotate_degrees == 0);
  CHECK(p.zoom == 1);
  CHECK(p.brightness == 0.5);
  CHECK(p.crop_row_pct == ltfit::draw_augment(AugmentConfig{}, 5).crop_row_pct);
}

TEST_CASE("draw_augment: random_crop false centres the crop and keeps every other draw",
          "[augment][data]") {
  AugmentConfig centred;
  centred.random_crop = false;
  bool moved = false;
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    const AugmentParams random = ltfit::draw_augment(AugmentConfig{}, seed);
    AugmentParams p = ltfit::draw_augment(centred, seed);
    REQUIRE(p.crop_row_pct == 0.5);
    REQUIRE(p.crop_col_pct == 0.5);
    moved = moved || random.crop_row_pct != 0.5;
    p.crop_row_pct = random.crop_row_pct;
    p.crop_col_pct = random.crop_col_pct;
    REQUIRE(same_params(p, random));  // the crop's two values are still drawn (fixed order)
  }
  CHECK(moved);
  // Every augmentation off and a centred crop: the identity, which is validation's transform.
  AugmentConfig off{false, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, false};
  for (std::uint64_t seed = 0; seed < 50; ++seed)
    REQUIRE(same_params(ltfit::draw_augment(off, seed), AugmentParams{}));
}

TEST_CASE("sampling_matrix: identity maps output pixel centres onto the crop square",
          "[augment][data]") {
  AugmentParams p;
  p.crop_col_pct = 0.25;  // 300x200 source: side 200, x0 = 0.25 * 100
  const auto m = ltfit::sampling_matrix(p, 300, 200, 80);
  for (const auto& [u, v] : std::vector<std::array<double, 2>>{{0, 0}, {79, 0}, {40, 13}}) {
    const auto src = apply(m, u, v);
    CHECK(src[0] == Approx(25 + (u + 0.5) * 200 / 80 - 0.5).margin(1e-9));
    CHECK(src[1] == Approx((v + 0.5) * 200 / 80 - 0.5).margin(1e-9));
  }
}

TEST_CASE("load_augmented_image: identity equals a plain centre crop and resize",
          "[augment][data]") {
  TempDir dir;
  const cv::Mat source = smooth_image(320, 240);
  const std::string path = write_image(dir.path() / "smooth.png", source);
  const cv::Mat out = to_bgr(load_with(path, 120, AugmentParams{}));
  cv::Mat expected;
  cv::resize(source(cv::Rect(40, 0, 240, 240)), expected, cv::Size(120, 120), 0, 0,
             cv::INTER_LINEAR);
  CHECK(max_abs_diff(out, expected) <= 2);
}

TEST_CASE("load_augmented_image: a reduced JPEG decode still matches the full image",
          "[augment][data]") {
  TempDir dir;
  const cv::Mat source = smooth_image(800, 600);  // 600 / 8 >= 64: decoded at 1/8 scale
  const std::string path = write_image(dir.path() / "smooth.jpg", source);
  const cv::Mat out = to_bgr(load_with(path, 64, AugmentParams{}));
  cv::Mat expected;
  cv::resize(source(cv::Rect(100, 0, 600, 600)), expected, cv::Size(64, 64), 0, 0, cv::INTER_AREA);
  CHECK(mean_abs_diff(out, expected) < 3);
}

TEST_CASE("load_augmented_image: flip mirrors the unflipped result", "[augment][data]") {
  TempDir dir;
  const std::string path = write_image(dir.path() / "smooth.png", smooth_image(150, 110));
  AugmentParams p;
  p.crop_col_pct = 0.3;
  p.rotate_degrees = 7;
  p.zoom = 1.08;
  p.zoom_row_pct = 0.2;
  p.warp = {0.1, -0.05, 0.15, 0.02};
  p.brightness = 0.55;
  const cv::Mat plain = to_bgr(load_with(path, 57, p));
  p.flip = true;
  const cv::Mat flipped = to_bgr(load_with(path, 57, p));
  cv::Mat mirrored;
  cv::flip(plain, mirrored, 1);
  CHECK(max_abs_diff(flipped, mirrored) <= 1);
  CHECK(max_abs_diff(flipped, plain) > 10);
}

TEST_CASE("load_augmented_image: rotation by 90 degrees moves a marked corner", "[augment][data]") {
  TempDir dir;
  cv::Mat source(100, 100, CV_8UC3, cv::Scalar(128, 128, 128));
  source(cv::Rect(80, 0, 20, 20)).setTo(cv::Scalar(0, 0, 255));  // top-right corner red
  const std::string path = write_image(dir.path() / "corner.png", source);
  AugmentParams p;
  p.rotate_degrees = 90;  // fastai: output (x, y) samples (-y, x): output top-left <- top-right
  const torch::Tensor out = load_with(path, 50, p);
  const auto red = [&](int x, int y) {
    return out[y][x][0].item<int>() > 200 && out[y][x][2].item<int>() < 50;
  };
  CHECK(red(2, 2));
  CHECK_FALSE(red(47, 2));
  CHECK_FALSE(red(2, 47));
  CHECK_FALSE(red(47, 47));
  CHECK(red(2, 2) != red(2, 2 + 25));  // the mark is a corner, not the whole image
}

TEST_CASE("load_augmented_image: zoom 2 at the centre shows the central half", "[augment][data]") {
  TempDir dir;
  cv::Mat source(200, 200, CV_8UC3, cv::Scalar(255, 0, 0));         // blue
  source(cv::Rect(50, 50, 100, 100)).setTo(cv::Scalar(0, 0, 255));  // red central half
  const std::string path = write_image(dir.path() / "centre.png", source);
  AugmentParams p;
  p.zoom = 2;
  const torch::Tensor zoomed = load_with(path, 64, p);
  CHECK(zoomed.select(2, 0).min().item<int>() > 240);  // all red
  CHECK(zoomed.select(2, 2).max().item<int>() < 15);
  const torch::Tensor plain = load_with(path, 64, AugmentParams{});
  CHECK(plain[0][0][2].item<int>() > 240);  // without zoom the corner is blue
}

TEST_CASE("sampling_matrix: symmetric warp follows fastai's direction, 0 is the identity",
          "[augment][data]") {
  const AugmentParams identity;
  AugmentParams zero;
  zero.warp = {0, 0, 0, 0};
  CHECK(ltfit::sampling_matrix(zero, 64, 64, 64) == ltfit::sampling_matrix(identity, 64, 64, 64));
  // With a square source of the output's size, normalized x maps to pixel (x + 1) * 32 - 0.5 in
  // both; fastai's warp samples corner i at the output position of target point i.
  AugmentParams p;
  p.warp = {0.1, -0.15, 0.2, 0.05};
  const auto m = ltfit::sampling_matrix(p, 64, 64, 64);
  const auto& w = p.warp;
  const std::array<std::array<double, 2>, 4> corners = {{{-1, -1}, {-1, 1}, {1, -1}, {1, 1}}};
  const std::array<std::array<double, 2>, 4> targets = {
      {{-1 - w[3], -1 - w[1]}, {-1 - w[2], 1 + w[1]}, {1 + w[3], -1 - w[0]}, {1 + w[2], 1 + w[0]}}};
  const auto pixel = [](double x) { return (x + 1) * 32 - 0.5; };
  for (int i = 0; i < 4; ++i) {
    const auto src = apply(m, pixel(targets[i][0]), pixel(targets[i][1]));
    CHECK(src[0] == Approx(pixel(corners[i][0])).margin(1e-9));
    CHECK(src[1] == Approx(pixel(corners[i][1])).margin(1e-9));
  }
  const auto centre = apply(m, 31.5, 31.5);  // a perspective warp moves the centre a little
  CHECK(std::abs(centre[0] - 31.5) + std::abs(centre[1] - 31.5) < 8);
}

TEST_CASE("lighting_lut: identity exact, brightness and contrast act as fastai's",
          "[augment][data]") {
  const auto identity = ltfit::lighting_lut(AugmentParams{});
  for (int v = 0; v < 256; ++v) REQUIRE(identity[v] == v);

  AugmentParams bright;
  bright.brightness = 0.6;
  const auto b = ltfit::lighting_lut(bright);
  for (int v = 1; v < 255; ++v) REQUIRE(b[v] >= v);
  CHECK(b[128] > 140);

  AugmentParams contrasty;
  contrasty.contrast = 1.25;
  const auto c = ltfit::lighting_lut(contrasty);
  CHECK(c[64] < 64);
  CHECK(c[192] > 192);
  CHECK(c[128] == Approx(128).margin(1));

  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    const auto lut = ltfit::lighting_lut(ltfit::draw_augment(AugmentConfig{}, seed));
    REQUIRE(std::is_sorted(lut.begin(), lut.end()));
  }
}

TEST_CASE("load_augmented_image: always [size,size,3] uint8 RGB, deterministic per seed",
          "[augment][data]") {
  TempDir dir;
  const std::vector<std::string> paths = {
      write_image(dir.path() / "one.png", cv::Mat(1, 1, CV_8UC3, cv::Scalar(0, 0, 255))),
      write_image(dir.path() / "wide.png", smooth_image(3000, 100)),
      write_image(dir.path() / "tall.jpg", smooth_image(100, 700)),
      write_image(dir.path() / "odd.png", smooth_image(37, 53))};
  for (const std::string& path : paths) {
    for (const int size : {1, 7, 33, 64}) {
      const AugmentParams p = ltfit::draw_augment(AugmentConfig{}, size * 31 + path.size());
      const torch::Tensor out = load_with(path, size, p);
      REQUIRE(out.sizes() == torch::IntArrayRef({size, size, 3}));
      REQUIRE(out.dtype() == torch::kUInt8);
    }
  }
  // A pure red 1x1 source stays red (RGB order) whatever the geometry.
  const torch::Tensor red = load_with(paths[0], 9, ltfit::draw_augment(AugmentConfig{}, 3));
  CHECK(red.select(2, 0).min().item<int>() > 200);
  CHECK(red.select(2, 2).max().item<int>() < 60);

  const AugmentParams a = ltfit::draw_augment(AugmentConfig{}, 11);
  CHECK(torch::equal(load_with(paths[2], 48, a), load_with(paths[2], 48, a)));
  CHECK_FALSE(torch::equal(load_with(paths[2], 48, a),
                           load_with(paths[2], 48, ltfit::draw_augment(AugmentConfig{}, 12))));
}

TEST_CASE("load_augmented_image: bad files and arguments give nullopt with a reason",
          "[augment][data]") {
  TempDir dir;
  const auto reason = [](const std::string& path, int size = 32,
                         const AugmentParams& p = AugmentParams{}) {
    std::string error;
    const auto tensor = ltfit::load_augmented_image(path, size, p, &error);
    CHECK_FALSE(tensor.has_value());
    return error;
  };
  write_file(dir.path() / "empty.jpg", "");
  write_file(dir.path() / "text.jpg", "not an image at all");
  const std::string good = write_image(dir.path() / "good.jpg", smooth_image(64, 48));
  const std::string bytes = ltfit::testing::read_file(good);
  write_file(dir.path() / "cut.jpg", bytes.substr(0, bytes.size() / 2));
  CHECK_THAT(reason((dir.path() / "empty.jpg").string()), Catch::Contains("empty"));
  CHECK_THAT(reason((dir.path() / "text.jpg").string()), Catch::Contains("not a decodable"));
  CHECK_THAT(reason((dir.path() / "cut.jpg").string()), Catch::Contains("truncated"));
  CHECK_THAT(reason(dir.str()), Catch::Contains("directory"));
  CHECK_THAT(reason((dir.path() / "missing.jpg").string()), Catch::Contains("not found"));
  CHECK_THAT(reason(good, 0), Catch::Contains("size"));
  AugmentParams bad;
  bad.zoom = 0;
  CHECK_THAT(reason(good, 32, bad), Catch::Contains("zoom"));
  bad.zoom = std::nan("");
  CHECK_THAT(reason(good, 32, bad), Catch::Contains("finite"));
}

// Before, warpPerspective refused a source side over SHRT_MAX ("... SHRT_MAX in remap") and the
// loader skipped a valid 33000×8 PNG that evaluate and predict take. The warp now reads only the
// part of the image the output samples: the same pixels as warping a narrow cut-out of it.
TEST_CASE("a 33000x8 PNG goes through the training augmentation like a cut-out of it",
          "[augment][data]") {
  TempDir dir;
  const cv::Mat wide = smooth_image(33000, 8);
  const std::string path = write_image(dir.path() / "wide.png", wide);
  const int side = 8, margin = 100;
  for (const double col_pct : {0.0, 0.5, 1.0}) {
    const int x0 = static_cast<int>(std::lround(col_pct * (wide.cols - side)));
    const int first = std::max(0, x0 - margin);
    const int end = std::min(wide.cols, x0 + side + margin);
    const std::string cut = write_image(dir.path() / "cut.png",
                                        wide(cv::Rect(first, 0, end - first, wide.rows)).clone());
    for (const std::uint64_t seed : {1u, 2u, 3u, 4u}) {
      AugmentConfig config;
      config.p_affine = 1.0;  // rotation, zoom and warp every time
      AugmentParams p = ltfit::draw_augment(config, seed);
      p.crop_col_pct = col_pct;
      AugmentParams q = p;  // the same square, in the cut-out's coordinates
      q.crop_col_pct = end - first == side ? 0.0 : double(x0 - first) / (end - first - side);
      INFO("crop_col_pct " << col_pct << ", seed " << seed);
      const torch::Tensor out = load_with(path, 32, p);
      CHECK(out.sizes() == torch::IntArrayRef({32, 32, 3}));
      CHECK(max_abs_diff(to_bgr(out), to_bgr(load_with(cut, 32, q))) <= 1);
    }
  }
  // A tall one too, with the identity draw.
  const std::string tall = write_image(dir.path() / "tall.png", smooth_image(6, 33000));
  CHECK(load_with(tall, 24, AugmentParams{}).sizes() == torch::IntArrayRef({24, 24, 3}));
}
