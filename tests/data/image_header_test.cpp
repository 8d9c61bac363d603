// The image header check: every format OpenCV decodes here is identified by its bytes with the
// size its decoder will allocate for (checked against OpenCV's own encoders and decoder), hostile
// headers are read without trusting them, and the limits refuse with messages naming the key.
#include "ltfit/data/image_header.h"

#include <catch2/catch.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "data/hostile_images.h"

namespace Catch {
template <>
struct StringMaker<ltfit::ImageFormat> {
  static std::string convert(ltfit::ImageFormat format) { return ltfit::image_format_name(format); }
};
}  // namespace Catch

namespace ltfit {
namespace {

using Catch::Matchers::Contains;
using testing::bytes_of;

std::optional<ImageHeader> header_of(const std::string& bytes, std::string* error) {
  return read_image_header(
      std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), error);
}

ImageHeader must_read(const std::string& bytes) {
  std::string error;
  const auto header = header_of(bytes, &error);
  INFO(error);
  REQUIRE(header.has_value());
  return *header;
}

std::string must_fail(const std::string& bytes) {
  std::string error;
  CHECK_FALSE(header_of(bytes, &error).has_value());
  CHECK_FALSE(error.empty());
  return error;
}

// An OpenEXR header whose data window is `width` x `height`.
std::string exr_claiming(std::uint32_t width, std::uint32_t height) {
  return bytes_of({0x76, 0x2F, 0x31, 0x01, 2, 0, 0, 0}) + "dataWindow" + '\0' + "box2i" + '\0' +
         testing::le32(16) + testing::le32(0) + testing::le32(0) + testing::le32(width - 1) +
         testing::le32(height - 1) + '\0';
}

TEST_CASE("image header: sizes agree with OpenCV's encoders and decoder, every format",
          "[data][header]") {
  // Odd sizes, so width and height cannot be confused or rounded.
  cv::Mat image(45, 71, CV_8UC3, cv::Scalar(10, 120, 240));
  cv::Mat grey(45, 71, CV_8UC1, cv::Scalar(77));
  cv::Mat floats;
  image.convertTo(floats, CV_32FC3, 1 / 255.0);
  struct Case {
    const char* extension;
    const cv::Mat* mat;
    ImageFormat format;
    std::vector<int> params;
  };
  const std::vector<Case> cases = {
      {".jpg", &image, ImageFormat::kJpeg, {}},
      {".jpg", &image, ImageFormat::kJpeg, {cv::IMWRITE_JPEG_PROGRESSIVE, 1}},
      {".png", &image, ImageFormat::kPng, {}},
      {".webp", &image, ImageFormat::kWebp, {cv::IMWRITE_WEBP_QUALITY, 101}},  // lossless
      {".webp", &image, ImageFormat::kWebp, {cv::IMWRITE_WEBP_QUALITY, 80}},   // lossy
      {".bmp", &image, ImageFormat::kBmp, {}},
      {".tiff", &image, ImageFormat::kTiff, {}},
      {".ppm", &image, ImageFormat::kPnm, {}},
      {".pgm", &grey, ImageFormat::kPnm, {}},
      {".pbm", &grey, ImageFormat::kPnm, {}},
      {".pam", &image, ImageFormat::kPnm, {}},
      {".pfm", &floats, ImageFormat::kPfm, {}},
      {".ras", &image, ImageFormat::kSunRaster, {}},
      {".hdr", &floats, ImageFormat::kHdr, {}},
      {".jp2", &image, ImageFormat::kJpeg2000, {}},
  };
  for (const Case& c : cases) {
    INFO(c.extension << " " << image_format_name(c.format));
    std::vector<uchar> encoded;
    REQUIRE(cv::imencode(c.extension, *c.mat, encoded, c.params));
    const std::string bytes(encoded.begin(), encoded.end());
    const ImageHeader header = must_read(bytes);
    CHECK(header.format == c.format);
    CHECK(header.width == 71);
    CHECK(header.height == 45);
    const cv::Mat decoded = cv::imdecode(encoded, cv::IMREAD_UNCHANGED);
    REQUIRE_FALSE(decoded.empty());
    CHECK(header.width == static_cast<std::uint64_t>(decoded.cols));
    CHECK(header.height == static_cast<std::uint64_t>(decoded.rows));
  }
}

TEST_CASE("image header: hostile JPEGs are sized from the frame header, with libjpeg's buffers",
          "[data][header]") {
  const ImageHeader progressive = must_read(testing::progressive_jpeg(40000, 40000));
  CHECK(progressive.format == ImageFormat::kJpeg);
  CHECK(progressive.width == 40000);
  CHECK(progressive.height == 40000);
  // The whole-image coefficient buffer: 2 bytes per sample, 4:2:0 -> 1.5 samples per pixel.
  CHECK(progressive.work_bytes >= 3ULL * 40000 * 40000);
  const ImageHeader baseline = must_read(testing::baseline_jpeg(65000, 65000));
  CHECK(baseline.pixels() == 65000ULL * 65000ULL);
  CHECK(baseline.work_bytes < 64ULL << 20);  // one interleaved scan: a row of blocks only
  // A non-interleaved first scan (one component of three) also needs the whole buffer.
  std::string multi_scan = testing::jpeg_head(0xC0, 40000, 40000) +
                           testing::jpeg_segment(0xDA, bytes_of({1, 1, 0x00, 0, 63, 0})) +
                           bytes_of({0, 0, 0xFF, 0xD9});
  CHECK(must_read(multi_scan).work_bytes >= 3ULL * 40000 * 40000);
  // Stray bytes and fill bytes between markers are skipped as libjpeg skips them.
  std::string stray = testing::progressive_jpeg(50000, 100);
  stray.insert(2 + 69, bytes_of({0x00, 0x13, 0xFF, 0xFF}));  // after the quantisation table
  CHECK(must_read(stray).width == 50000);
  CHECK_THAT(must_fail(bytes_of({0xFF, 0xD8, 0xFF, 0xD9})), Contains("end of image"));
  CHECK_THAT(must_fail(testing::jpeg_head(0xC3, 100, 100)), Contains("unsupported JPEG process"));
  CHECK_THAT(must_fail(testing::jpeg_head(0xC0, 0, 100)), Contains("empty image"));
  CHECK_THAT(must_fail(testing::jpeg_head(0xC0, 100, 100)), Contains("no scan"));
}

TEST_CASE("image header: other hostile headers are read, not trusted", "[data][header]") {
  const ImageHeader png = must_read(testing::png_claiming(30000, 30000));
  CHECK((png.format == ImageFormat::kPng && png.pixels() == 900'000'000ULL));
  const ImageHeader tiff = must_read(testing::tiff_claiming(32000, 32000));
  CHECK((tiff.format == ImageFormat::kTiff && tiff.width == 32000 && tiff.height == 32000));
  CHECK(tiff.tile_pixels() == 32000ULL * 32000ULL);  // one strip of every row
  const ImageHeader hdr = must_read(testing::hdr_claiming(20000, 20000));
  CHECK((hdr.format == ImageFormat::kHdr && hdr.width == 20000));
  CHECK(hdr.work_bytes >= 12ULL * 20000 * 20000);  // the float image
  const ImageHeader webp = must_read(testing::webp_claiming(16384, 16384));
  CHECK((webp.format == ImageFormat::kWebp && webp.pixels() == 16384ULL * 16384ULL));
  // A TIFF whose strip is far taller than its image still has that strip buffered whole.
  std::string tall_strip = testing::tiff_claiming(16, 16);
  tall_strip.replace(8 + 2 + 7 * 12 + 8, 4, testing::le32(50'000'000));  // RowsPerStrip
  CHECK(must_read(tall_strip).tile_pixels() == 16ULL * 50'000'000ULL);
  // PNM family, Sun raster, GIF, JPEG 2000 codestream, OpenEXR.
  CHECK(must_read("P6\n# comment\n 70000 60000\n255\n").pixels() == 4'200'000'000ULL);
  CHECK(must_read("P7\nWIDTH 5000\nHEIGHT 7000\nDEPTH 3\nMAXVAL 255\nENDHDR\n").height == 7000);
  CHECK(must_read("PF\n30000 20000\n-1.0\n").width == 30000);
  CHECK(must_read(bytes_of({0x59, 0xA6, 0x6A, 0x95}) + testing::be32(9000) + testing::be32(8000) +
                  testing::be32(24) + std::string(16, '\0'))
            .pixels() == 72'000'000ULL);
  const ImageHeader gif = must_read("GIF89a" + testing::le16(640) + testing::le16(480));
  CHECK((gif.format == ImageFormat::kGif && gif.width == 640));
  const std::string siz = bytes_of({0xFF, 0x4F, 0xFF, 0x51, 0, 41, 0, 0}) + testing::be32(100000) +
                          testing::be32(90000) + testing::be32(0) + testing::be32(0) +
                          testing::be32(1024) + testing::be32(1024) + testing::be32(0) +
                          testing::be32(0) + testing::be16(3) +
                          bytes_of({7, 1, 1, 7, 1, 1, 7, 1, 1});
  CHECK(must_read(siz).pixels() == 9'000'000'000ULL);
  CHECK(must_read(exr_claiming(50000, 40000)).pixels() == 2'000'000'000ULL);
}

TEST_CASE("image header: unknown, ambiguous, never-decoded and cut-short files", "[data][header]") {
  CHECK_THAT(must_fail("hello, I am not an image"),
             Contains("not a decodable image (unrecognised format; first bytes 68 65 6c 6c"));
  // PNG magic, and "DICM" at 128 as well: OpenCV and we might disagree on the decoder.
  std::string both = testing::png_claiming(10, 10);
  both.resize(160, '\0');
  both.replace(128, 4, "DICM");
  CHECK_THAT(must_fail(both), Contains("ambiguous image format"));
  std::string dicom(132, '\0');
  dicom.replace(128, 4, "DICM");
  CHECK(must_read(dicom).format == ImageFormat::kDicom);
  CHECK(must_read("NITF02.10").format == ImageFormat::kGdal);
  // Every prefix of every hostile file: no crash, no hang, at most an error.
  for (const std::string& whole :
       {testing::progressive_jpeg(40000, 40000), testing::png_claiming(30000, 30000),
        testing::tiff_claiming(32000, 32000), testing::hdr_claiming(20000, 20000),
        testing::webp_claiming(16384, 16384), exr_claiming(50000, 40000)}) {
    for (std::size_t n = 0; n < whole.size(); ++n) {
      std::string error;
      header_of(whole.substr(0, n), &error);
    }
  }
}

TEST_CASE("image limits: pixel budget and formats refuse with the key to change",
          "[data][header]") {
  ImageLimits limits;
  CHECK(limits.max_pixels == 89'478'485);
  CHECK((limits.formats == image_limits(DataConfig{}).formats));
  const ImageHeader huge = must_read(testing::progressive_jpeg(40000, 40000));
  CHECK(check_image_limits(huge, limits) ==
        "image is 40000×40000 = 1600000000 pixels, over data.max_pixels (89478485); raise "
        "data.max_pixels to allow it");
  limits.max_pixels = 0;  // no limit
  CHECK(check_image_limits(huge, limits).empty());
  const ImageHeader hdr = must_read(testing::hdr_claiming(64, 64));
  CHECK(check_image_limits(hdr, ImageLimits{}) ==
        "format hdr not in data.formats (jpeg, png, webp, bmp, tiff); add it to data.formats to "
        "decode it");
  DataConfig data;
  data.formats = {"hdr"};
  CHECK(check_image_limits(hdr, image_limits(data)).empty());
  CHECK_THAT(
      check_image_limits(must_read("GIF89a" + testing::le16(4) + testing::le16(4)), ImageLimits{}),
      Contains("format gif not in data.formats") && Contains("ltfit never decodes it"));
  std::string tall_strip = testing::tiff_claiming(16, 16);
  tall_strip.replace(8 + 2 + 7 * 12 + 8, 4, testing::le32(50'000'000));
  CHECK_THAT(check_image_limits(must_read(tall_strip), ImageLimits{}),
             Contains("its TIFF tile is 16×50000000 = 800000000 pixels, over data.max_pixels"));
  for (const std::string& name : kImageFormatNames) {
    INFO(name);
    REQUIRE(image_format_from_name(name).has_value());
    CHECK(image_format_name(*image_format_from_name(name)) == name);
  }
  CHECK_FALSE(image_format_from_name("gif").has_value());
}

}  // namespace
}  // namespace ltfit
