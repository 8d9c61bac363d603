// Decoding the committed format fixtures (tests/fixtures, made by make_fixtures.py): CMYK,
// grey, progressive and EXIF-rotated JPEGs, palette/RGBA/16-bit PNGs, BMP, WebP and a 1x1
// JPEG must all come out as [size,size,3] uint8 RGB with the colours the generator drew.
// Alpha is dropped, not composited, as PIL's convert("RGB") in torchvision's ImageFolder does.
#include <array>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <torch/torch.h>
#include <catch2/catch.hpp>

#include "ltfit/data/image_io.h"
#include "support/test_support.h"

namespace {

namespace fs = std::filesystem;
using Rgb = std::array<int, 3>;
using Quadrants = std::array<Rgb, 4>;  // top-left, top-right, bottom-left, bottom-right

constexpr int kOutputSide = 32;      // output side; each quadrant is 16x16 after the centre crop
constexpr int kLossyTolerance = 10;  // JPEG/chroma subsampling error allowed per channel

// The colours make_fixtures.py draws (QUADRANTS, GREYS, SOLID there).
const Quadrants kColours = {{{220, 30, 30}, {30, 200, 40}, {30, 40, 220}, {230, 220, 40}}};
const Quadrants kGreys = {{{40, 40, 40}, {100, 100, 100}, {160, 160, 160}, {220, 220, 220}}};
const Rgb kSolid = {200, 120, 50};

fs::path format_fixture(const std::string& name) {
  return ltfit::testing::source_dir() / "tests/fixtures" / name;
}

// Decodes a fixture with the default (centre) crop, requiring success and the output layout.
torch::Tensor load_fixture(const std::string& name) {
  const fs::path path = format_fixture(name);
  REQUIRE(fs::exists(path));
  std::string error;
  const auto image =
      ltfit::load_square_image(path.string(), kOutputSide, ltfit::CropFlip{}, &error);
  INFO(name << ": " << error);
  REQUIRE(image.has_value());
  REQUIRE(image->sizes() == torch::IntArrayRef({kOutputSide, kOutputSide, 3}));
  REQUIRE(image->dtype() == torch::kUInt8);
  return *image;
}

Rgb quadrant_rgb(const torch::Tensor& image, int x, int y) {
  const auto pixel = image[y][x];
  return {pixel[0].item<int>(), pixel[1].item<int>(), pixel[2].item<int>()};
}

// Checks the centre of each quadrant against `expected`, each channel within `tolerance`.
void check_quadrants(const torch::Tensor& image, const Quadrants& expected, int tolerance) {
  constexpr int kNear = kOutputSide / 4, kFar = 3 * kOutputSide / 4;
  const std::array<std::array<int, 2>, 4> centres = {
      {{kNear, kNear}, {kFar, kNear}, {kNear, kFar}, {kFar, kFar}}};
  for (size_t q = 0; q < 4; ++q) {
    const Rgb actual = quadrant_rgb(image, centres[q][0], centres[q][1]);
    for (size_t c = 0; c < 3; ++c) {
      INFO("quadrant " << q << " channel " << c << ": expected " << expected[q][c] << ", got "
                       << actual[c]);
      CHECK(std::abs(actual[c] - expected[q][c]) <= tolerance);
    }
  }
}

}  // namespace

TEST_CASE("lossless formats decode to the exact colours", "[data][formats]") {
  // BMP, 8-bit RGBA and palette PNGs and lossless WebP are exact; 16-bit PNGs keep the high
  // byte (v*257 -> v).
  const char* name =
      GENERATE("rgb.bmp", "rgba.png", "palette_transparent.png", "rgb16.png", "lossless.webp");
  INFO(name);
  check_quadrants(load_fixture(name), kColours, /*tolerance=*/1);
}

TEST_CASE("16-bit greyscale PNG comes out as 8-bit grey RGB", "[data][formats]") {
  check_quadrants(load_fixture("gray16.png"), kGreys, /*tolerance=*/1);
}

TEST_CASE("greyscale JPEG comes out as grey RGB", "[data][formats]") {
  check_quadrants(load_fixture("gray.jpg"), kGreys, kLossyTolerance);
}

TEST_CASE("CMYK and progressive JPEGs decode to RGB", "[data][formats]") {
  const char* name = GENERATE("cmyk.jpg", "progressive.jpg");
  INFO(name);
  check_quadrants(load_fixture(name), kColours, kLossyTolerance);
}

TEST_CASE("EXIF orientation 6 is applied: the image comes out upright", "[data][formats]") {
  // Stored sideways (64x48); upright it is 48x64 with red top-left. Ignoring the tag would put
  // green (upright top-right) at the top-left.
  check_quadrants(load_fixture("exif_orientation6.jpg"), kColours, kLossyTolerance);
}

TEST_CASE("a 1x1 JPEG is upscaled to a solid square", "[data][formats]") {
  const torch::Tensor image = load_fixture("pixel_1x1.jpg");
  const Quadrants solid = {kSolid, kSolid, kSolid, kSolid};
  check_quadrants(image, solid, kLossyTolerance);
  CHECK(quadrant_rgb(image, 0, 0) == quadrant_rgb(image, kOutputSide - 1, kOutputSide - 1));
}
