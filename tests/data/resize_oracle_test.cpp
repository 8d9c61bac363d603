// The hidden "[.][resize_oracle]" case, run by tests/data/resize_oracle.sh (torchvision's
// RandomResizedCrop and fastai's validation Resize as the oracles of data.augment.crop
// random_resized, data.resize_method and data.pad_mode), and the framing's own checks.
#include <cstdlib>
#include <filesystem>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "ltfit/data/augment.h"
#include "ltfit/data/image_io.h"
#include "support/test_support.h"

namespace fs = std::filesystem;

namespace {

void write_pixels(const fs::path& path, const torch::Tensor& image) {
  const torch::Tensor contiguous = image.contiguous();
  ltfit::testing::write_file(
      path, std::string(static_cast<const char*>(contiguous.data_ptr()), contiguous.nbytes()));
}

ltfit::ResizedCropDraw draw_of(const nlohmann::json& c) {
  return {c.at("seed").get<std::uint64_t>(),
          {c.at("scale")[0].get<double>(), c.at("scale")[1].get<double>()},
          {c.at("ratio")[0].get<double>(), c.at("ratio")[1].get<double>()}};
}

}  // namespace

// Run by tests/data/resize_oracle.sh: answers cases.json's RandomResizedCrop cases (the box and
// the 32 x 32 pixels, augmentation otherwise off) and fastai cases (the validation framing).
TEST_CASE("resize oracle: RandomResizedCrop boxes and pixels, fastai's Resize methods",
          "[.][resize_oracle]") {
  const char* dir = std::getenv("LTFIT_RESIZE_ORACLE_DIR");
  if (dir == nullptr) FAIL("LTFIT_RESIZE_ORACLE_DIR is not set: run tests/data/resize_oracle.sh");
  const fs::path base(dir);
  const auto cases = nlohmann::json::parse(ltfit::testing::read_file(base / "cases.json"));
  const int size = cases.at("size");
  int n = 0;
  for (const auto& c : cases.at("rrc")) {
    const std::string path = (base / c.at("image").get<std::string>()).string();
    const ltfit::PixelBox box =
        ltfit::random_resized_box(draw_of(c), c.at("width").get<int>(), c.at("height").get<int>());
    ltfit::testing::write_file(base / ("rrc_box_" + std::to_string(n) + ".json"),
                               nlohmann::json({box.y, box.x, box.height, box.width}).dump());
    ltfit::AugmentParams params;
    params.resized_crop = draw_of(c);
    std::string error;
    const auto image = ltfit::load_augmented_image(ltfit::ImageInput(path), size, params, &error);
    INFO(error);
    REQUIRE(image.has_value());
    write_pixels(base / ("ltfit_rrc_" + std::to_string(n++) + ".bin"), *image);
  }
  n = 0;
  for (const auto& c : cases.at("fastai")) {
    const std::string path = (base / c.at("image").get<std::string>()).string();
    ltfit::CropFlip crop;
    crop.framing = {ltfit::parse_resize_method(c.at("method").get<std::string>()),
                    ltfit::parse_pad_mode(c.at("pad_mode").get<std::string>())};
    std::string error;
    const auto image = ltfit::load_square_image(ltfit::ImageInput(path), size, crop, &error);
    INFO(error);
    REQUIRE(image.has_value());
    write_pixels(base / ("ltfit_fastai_" + std::to_string(n++) + ".bin"), *image);
  }
}

namespace {

// A width x height PNG whose left half is red and right half blue, top row green (BGR written).
std::string halves_png(const fs::path& path, int width, int height) {
  cv::Mat image(height, width, CV_8UC3, cv::Scalar(0, 0, 255));
  image(cv::Rect(width / 2, 0, width - width / 2, height)).setTo(cv::Scalar(255, 0, 0));
  image.row(0).setTo(cv::Scalar(0, 255, 0));
  REQUIRE(cv::imwrite(path.string(), image));
  return path.string();
}

torch::Tensor framed(const std::string& path, ltfit::ResizeMethod method, ltfit::PadMode pad) {
  ltfit::CropFlip crop;
  crop.framing = {method, pad};
  std::string error;
  const auto image = ltfit::load_square_image(ltfit::ImageInput(path), 16, crop, &error);
  INFO(error);
  REQUIRE(image.has_value());
  return image->to(torch::kInt);
}

}  // namespace

TEST_CASE("RandomResizedCrop boxes lie in the image, repeat with the seed and fall back centred",
          "[data]") {
  for (const auto& [w, h] : {std::pair{1, 1}, {1, 500}, {500, 1}, {97, 61}, {3, 4096}}) {
    for (std::uint64_t seed = 0; seed < 40; ++seed) {
      const ltfit::ResizedCropDraw draw{seed, {0.08, 1.0}, {0.75, 4.0 / 3.0}};
      const ltfit::PixelBox box = ltfit::random_resized_box(draw, w, h);
      INFO(w << "x" << h << " seed " << seed);
      CHECK(box.width >= 1);
      CHECK(box.height >= 1);
      CHECK(box.x >= 0);
      CHECK(box.y >= 0);
      CHECK(box.x + box.width <= w);
      CHECK(box.y + box.height <= h);
      const ltfit::PixelBox again = ltfit::random_resized_box(draw, w, h);
      CHECK((again.x == box.x && again.y == box.y && again.width == box.width &&
             again.height == box.height));
    }
  }
  // Ratio 3..4 cannot fit a 100 x 100 image's 90 %: the central 100 x 33 strip (round(100 / 3)).
  const ltfit::PixelBox strip = ltfit::random_resized_box({7, {0.9, 1.0}, {3.0, 4.0}}, 100, 100);
  CHECK((strip.x == 0 && strip.width == 100 && strip.height == 33 && strip.y == 33));
}

TEST_CASE("draw_augment: random_resized adds its draw after every other one", "[data]") {
  ltfit::AugmentConfig plain;
  ltfit::AugmentConfig resized = plain;
  resized.crop = ltfit::TrainCrop::kRandomResized;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const ltfit::AugmentParams a = ltfit::draw_augment(plain, seed);
    const ltfit::AugmentParams b = ltfit::draw_augment(resized, seed, {ltfit::ResizeMethod::kPad});
    CHECK_FALSE(a.resized_crop.has_value());
    REQUIRE(b.resized_crop.has_value());
    CHECK(b.resized_crop->seed < (std::uint64_t{1} << 63));
    CHECK(b.framing.method == ltfit::ResizeMethod::kPad);
    CHECK((a.crop_row_pct == b.crop_row_pct && a.flip == b.flip && a.zoom == b.zoom &&
           a.rotate_degrees == b.rotate_degrees && a.brightness == b.brightness));
  }
}

TEST_CASE("resize methods: crop takes the centre, squish the whole image and pad fills by mode",
          "[data]") {
  const ltfit::testing::TempDir dir;
  const std::string wide = halves_png(dir.path() / "wide.png", 64, 32);
  using ltfit::PadMode;
  using ltfit::ResizeMethod;
  // squish: 64 x 32 to 16 x 16, the halves stay halves; row 0 still green-ish at the top.
  const torch::Tensor squish = framed(wide, ResizeMethod::kSquish, PadMode::kReflection);
  CHECK(squish[8][2][0].item<int>() > 200);   // red on the left
  CHECK(squish[8][13][2].item<int>() > 200);  // blue on the right
  // crop: the centre 32 x 32 square, half red half blue around its middle.
  const torch::Tensor crop = framed(wide, ResizeMethod::kCrop, PadMode::kReflection);
  CHECK(crop[8][3][0].item<int>() > 200);
  CHECK(crop[8][12][2].item<int>() > 200);
  // pad: the 64 x 64 square, the image in rows 4..11 of 16, above and below filled by the mode.
  const torch::Tensor zeros = framed(wide, ResizeMethod::kPad, PadMode::kZeros);
  CHECK(zeros.index({torch::indexing::Slice(0, 4)}).sum().item<int>() == 0);
  CHECK(zeros.index({torch::indexing::Slice(12, 16)}).sum().item<int>() == 0);
  CHECK(zeros[8][2][0].item<int>() > 200);
  const torch::Tensor border = framed(wide, ResizeMethod::kPad, PadMode::kBorder);
  CHECK(torch::equal(border[0], border[4]));  // the first image row (green-tinted) repeated
  CHECK(border[0][2][1].item<int>() > 0);
  const torch::Tensor reflect = framed(wide, ResizeMethod::kPad, PadMode::kReflection);
  CHECK(torch::equal(reflect[3], reflect[5]));  // mirrored about row 4, the edge not repeated
  CHECK(reflect[15][13][2].item<int>() > 200);
  // A 1 x 300 strip pads to a square without holding the 300 x 300 window.
  const std::string strip = halves_png(dir.path() / "strip.png", 300, 1);
  const torch::Tensor thin = framed(strip, ResizeMethod::kPad, PadMode::kReflection);
  CHECK(thin.size(0) == 16);
}

TEST_CASE(
    "RandomResizedCrop of a JPEG: the box's rows decoded alone give the whole decode's pixels",
    "[data]") {
  const ltfit::testing::TempDir dir;
  cv::Mat image(150, 211, CV_8UC3);
  cv::randu(image, cv::Scalar::all(0), cv::Scalar::all(255));
  cv::GaussianBlur(image, image, {7, 7}, 2.0);  // photo-like, so the JPEG keeps detail
  const std::string jpeg = (dir.path() / "a.jpg").string();
  REQUIRE(cv::imwrite(jpeg, image));
  const std::string png = (dir.path() / "a.png").string();
  REQUIRE(cv::imwrite(png, cv::imread(jpeg)));  // the whole decode, kept losslessly
  for (std::uint64_t seed = 0; seed < 12; ++seed) {
    ltfit::AugmentParams params;
    params.resized_crop = ltfit::ResizedCropDraw{seed, {0.08, 1.0}, {0.75, 4.0 / 3.0}};
    params.flip = seed % 2 == 1;
    std::string error;
    const auto from_jpeg = ltfit::load_augmented_image(ltfit::ImageInput(jpeg), 48, params, &error);
    const auto from_png = ltfit::load_augmented_image(ltfit::ImageInput(png), 48, params, &error);
    INFO("seed " << seed << ": " << error);
    REQUIRE(from_jpeg.has_value());
    REQUIRE(from_png.has_value());
    CHECK(torch::equal(*from_jpeg, *from_png));
  }
}
