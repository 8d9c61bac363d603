// Tests of image decoding: RGB order, crop position, flip, colour conversions of unusual
// files (grey, RGBA, 16-bit), EXIF orientation, reduced-size JPEG decoding, that bad files
// give nullopt with a reason instead of throwing, and the geometry of torchvision's eval
// transform (its bytes are checked against Pillow by the parity test).
#include "ltfit/data/image_io.h"

#include <array>
#include <filesystem>
#include <stdexcept>

#include <torch/torch.h>
#include <catch2/catch.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "support/test_support.h"

namespace fs = std::filesystem;
using ltfit::CropFlip;
using ltfit::testing::read_file;
using ltfit::testing::TempDir;
using ltfit::testing::write_file;

namespace {

const cv::Scalar kRedBgr(0, 0, 255), kBlueBgr(255, 0, 0);

// Left half red, right half blue (BGR), written to `path`.
std::string write_halves(const fs::path& path, int width, int height) {
  cv::Mat image(height, width, CV_8UC3, kRedBgr);
  image(cv::Rect(width / 2, 0, width - width / 2, height)).setTo(kBlueBgr);
  REQUIRE(cv::imwrite(path.string(), image));
  return path.string();
}

torch::Tensor load(const std::string& path, int size, const CropFlip& crop = {}) {
  std::string error;
  auto tensor = ltfit::load_square_image(path, size, crop, &error);
  INFO(error);
  REQUIRE(tensor.has_value());
  return *tensor;
}

// Pixel (x, y) of a [H,W,3] uint8 tensor as {R, G, B}.
std::array<int, 3> rgb_at(const torch::Tensor& t, int x, int y) {
  return {t[y][x][0].item<int>(), t[y][x][1].item<int>(), t[y][x][2].item<int>()};
}

bool is_red(const std::array<int, 3>& p) { return p[0] > 230 && p[1] < 25 && p[2] < 25; }
bool is_blue(const std::array<int, 3>& p) { return p[2] > 230 && p[0] < 25 && p[1] < 25; }

std::string fail_reason(const std::string& path, int size = 32) {
  std::string error;
  const auto tensor = ltfit::load_square_image(path, size, CropFlip{}, &error);
  CHECK_FALSE(tensor.has_value());
  return error;
}

// An APP1 segment holding an EXIF block with one tag: orientation = `value`.
std::string exif_orientation_segment(int value) {
  const std::string tiff = std::string("II*\0\x08\0\0\0", 8) +           // little-endian, IFD at 8
                           std::string("\x01\0", 2) +                    // one entry
                           std::string("\x12\x01\x03\0\x01\0\0\0", 8) +  // 0x0112 SHORT x1
                           std::string(1, static_cast<char>(value)) + std::string("\0\0\0", 3) +
                           std::string("\0\0\0\0", 4);  // no next IFD
  const std::string payload = std::string("Exif\0\0", 6) + tiff;
  const size_t length = payload.size() + 2;
  return std::string("\xFF\xE1", 2) + static_cast<char>(length >> 8) +
         static_cast<char>(length & 0xFF) + payload;
}

}  // namespace

TEST_CASE("image_io: a red JPEG decodes to RGB uint8 [size,size,3]", "[data][image_io]") {
  TempDir dir;
  const std::string path = (dir.path() / "red.jpg").string();
  REQUIRE(cv::imwrite(path, cv::Mat(80, 120, CV_8UC3, kRedBgr)));
  const torch::Tensor t = load(path, 32);
  CHECK(t.sizes() == torch::IntArrayRef({32, 32, 3}));
  CHECK(t.dtype() == torch::kUInt8);
  CHECK(t.is_contiguous());
  CHECK(is_red(rgb_at(t, 16, 16)));
}

TEST_CASE("image_io: crop offsets pick the region, flip mirrors it", "[data][image_io]") {
  TempDir dir;
  const std::string path = write_halves(dir.path() / "halves.png", 200, 100);
  CropFlip left;
  left.offset_x = 0.0;
  CHECK(is_red(rgb_at(load(path, 16, left), 8, 8)));
  CropFlip right;
  right.offset_x = 1.0;
  CHECK(is_blue(rgb_at(load(path, 16, right), 8, 8)));

  CropFlip centre, flipped;
  flipped.flip = true;
  const torch::Tensor plain = load(path, 20, centre);
  const torch::Tensor mirror = load(path, 20, flipped);
  CHECK(is_red(rgb_at(plain, 1, 10)));
  CHECK(is_blue(rgb_at(mirror, 1, 10)));
  CHECK(torch::equal(mirror, torch::flip(plain, {1})));
}

TEST_CASE("image_io: enlarging and shrinking keep the content", "[data][image_io]") {
  TempDir dir;
  const std::string small = write_halves(dir.path() / "small.png", 20, 20);
  const torch::Tensor up = load(small, 64);
  CHECK(is_red(rgb_at(up, 4, 32)));
  CHECK(is_blue(rgb_at(up, 60, 32)));
  // Large enough for a 1/8-scale JPEG decode.
  const std::string large = write_halves(dir.path() / "large.jpg", 1600, 1200);
  const torch::Tensor down = load(large, 64);
  CHECK(down.sizes() == torch::IntArrayRef({64, 64, 3}));
  CHECK(is_red(rgb_at(down, 4, 32)));
  CHECK(is_blue(rgb_at(down, 60, 32)));
}

TEST_CASE("image_io: grey, RGBA and 16-bit PNGs come out as 8-bit RGB", "[data][image_io]") {
  TempDir dir;
  const std::string grey = (dir.path() / "grey.png").string();
  REQUIRE(cv::imwrite(grey, cv::Mat(30, 40, CV_8UC1, cv::Scalar(128))));
  CHECK(rgb_at(load(grey, 8), 4, 4) == std::array<int, 3>{128, 128, 128});

  const std::string rgba = (dir.path() / "rgba.png").string();
  REQUIRE(cv::imwrite(rgba, cv::Mat(30, 40, CV_8UC4, cv::Scalar(0, 255, 0, 128))));
  CHECK(rgb_at(load(rgba, 8), 4, 4) == std::array<int, 3>{0, 255, 0});

  const std::string deep = (dir.path() / "deep.png").string();
  REQUIRE(cv::imwrite(deep, cv::Mat(30, 40, CV_16UC3, cv::Scalar(0, 0, 65535))));
  const torch::Tensor t = load(deep, 8);
  CHECK(t.dtype() == torch::kUInt8);
  CHECK(rgb_at(t, 4, 4) == std::array<int, 3>{255, 0, 0});
}

TEST_CASE("image_io: EXIF orientation is applied", "[data][image_io]") {
  TempDir dir;
  // 64 wide, 32 high: red left, blue right. Orientation 6 turns it 90° clockwise to 32x64,
  // red on top, so the top square crop is red; unrotated, any square crop is half blue.
  cv::Mat image(32, 64, CV_8UC3, kRedBgr);
  image(cv::Rect(32, 0, 32, 32)).setTo(kBlueBgr);
  std::vector<uchar> jpeg;
  REQUIRE(cv::imencode(".jpg", image, jpeg, {cv::IMWRITE_JPEG_QUALITY, 95}));
  const std::string bytes(jpeg.begin(), jpeg.end());
  const fs::path path = dir.path() / "rotated.jpg";
  write_file(path, bytes.substr(0, 2) + exif_orientation_segment(6) + bytes.substr(2));
  CropFlip top;
  top.offset_y = 0.0;
  const torch::Tensor t = load(path.string(), 16, top);
  CHECK(is_red(rgb_at(t, 2, 2)));
  CHECK(is_red(rgb_at(t, 13, 13)));
}

TEST_CASE("image_io: bad files give nullopt and a reason", "[data][image_io]") {
  TempDir dir;
  write_file(dir.path() / "empty.jpg", "");
  CHECK_THAT(fail_reason((dir.path() / "empty.jpg").string()), Catch::Contains("empty"));
  write_file(dir.path() / "text.jpg", "this is not a JPEG at all");
  CHECK_FALSE(fail_reason((dir.path() / "text.jpg").string()).empty());
  CHECK_THAT(fail_reason((dir.path() / "missing.jpg").string()), Catch::Contains("not found"));
  fs::create_directories(dir.path() / "folder.jpg");
  CHECK_THAT(fail_reason((dir.path() / "folder.jpg").string()), Catch::Contains("directory"));

  const std::string whole = write_halves(dir.path() / "whole.jpg", 300, 200);
  const std::string jpeg = read_file(whole);
  write_file(dir.path() / "cut.jpg", jpeg.substr(0, jpeg.size() / 2));
  CHECK_THAT(fail_reason((dir.path() / "cut.jpg").string()), Catch::Contains("truncated"));
  const std::string png = read_file(write_halves(dir.path() / "whole.png", 300, 200));
  write_file(dir.path() / "cut.png", png.substr(0, png.size() / 2));
  CHECK_FALSE(fail_reason((dir.path() / "cut.png").string()).empty());

  CHECK_THAT(fail_reason(whole, 0), Catch::Contains("size"));
  std::string error;
  CHECK(ltfit::load_square_image(whole, 32, CropFlip{}, &error).has_value());
}

namespace {

torch::Tensor load_eval(const std::string& path, const ltfit::EvalTransform& transform) {
  std::string error;
  auto tensor = ltfit::load_eval_image(path, transform, &error);
  INFO(error);
  REQUIRE(tensor.has_value());
  return *tensor;
}

}  // namespace

TEST_CASE("image_io: the eval transform resizes the shorter side and crops the centre",
          "[data][image_io]") {
  TempDir dir;
  for (const auto filter : {ltfit::ResampleFilter::kBilinear, ltfit::ResampleFilter::kBicubic}) {
    // 800x400 -> 512x256; the crop's 224 columns start at (512 - 224) / 2 = 144, so the halves
    // meet at column 256 - 144 = 112 of the crop.
    const torch::Tensor wide =
        load_eval(write_halves(dir.path() / "wide.png", 800, 400), {256, 224, filter});
    CHECK(wide.sizes() == torch::IntArrayRef({224, 224, 3}));
    CHECK(is_red(rgb_at(wide, 105, 100)));
    CHECK(is_blue(rgb_at(wide, 119, 100)));
    CHECK(rgb_at(wide, 0, 0) == std::array<int, 3>{255, 0, 0});  // a flat area stays exact
    CHECK(rgb_at(wide, 223, 223) == std::array<int, 3>{0, 0, 255});
    // Portrait, enlarged: 150x300 -> 320x640; the halves meet at column 160 - 10 = 150 of 300.
    const torch::Tensor tall =
        load_eval(write_halves(dir.path() / "tall.png", 150, 300), {320, 300, filter});
    CHECK(tall.sizes() == torch::IntArrayRef({300, 300, 3}));
    CHECK(is_red(rgb_at(tall, 140, 150)));
    CHECK(is_blue(rgb_at(tall, 160, 150)));
  }
}

TEST_CASE("image_io: a flat colour stays exact through both eval filters", "[data][image_io]") {
  TempDir dir;
  const std::string path = (dir.path() / "flat.png").string();
  REQUIRE(cv::imwrite(path, cv::Mat(250, 333, CV_8UC3, cv::Scalar(201, 150, 37))));
  for (const auto filter : {ltfit::ResampleFilter::kBilinear, ltfit::ResampleFilter::kBicubic}) {
    for (const int resize : {64, 250, 700}) {
      INFO("resize " << resize);
      const torch::Tensor out = load_eval(path, {resize, 60, filter});
      CHECK(out.select(2, 0).eq(37).all().item<bool>());
      CHECK(out.select(2, 1).eq(150).all().item<bool>());
      CHECK(out.select(2, 2).eq(201).all().item<bool>());
    }
  }
}

TEST_CASE("image_io: eval transform errors are reasons, not exceptions", "[data][image_io]") {
  TempDir dir;
  const std::string halves = write_halves(dir.path() / "halves.png", 64, 48);
  std::string error;
  CHECK_FALSE(ltfit::load_eval_image(halves, {200, 224}, &error).has_value());
  CHECK_THAT(error, Catch::Contains("invalid eval transform"));
  // 256 * 70000 px on the longer side is past what Pillow's float box holds exactly.
  const std::string strip = (dir.path() / "strip.png").string();
  REQUIRE(cv::imwrite(strip, cv::Mat(1, 70000, CV_8UC3, cv::Scalar(1, 2, 3))));
  error.clear();
  CHECK_FALSE(ltfit::load_eval_image(strip, {256, 224}, &error).has_value());
  CHECK_THAT(error, Catch::Contains("too elongated"));
  error.clear();
  CHECK_FALSE(
      ltfit::load_eval_image((dir.path() / "missing.png").string(), {}, &error).has_value());
  CHECK_THAT(error, Catch::Contains("not found"));
  CHECK(ltfit::resample_filter_named("bicubic") == ltfit::ResampleFilter::kBicubic);
  CHECK_THROWS_AS(ltfit::resample_filter_named("nearest"), std::invalid_argument);
}
