// Tests of the libjpeg-turbo decoder (src/data/jpeg_decode.h): at OpenCV's scales its pixels are
// cv::imdecode's, a region decode equals the whole decode there (every M/8, every chroma layout,
// progressive, restart markers, grey), EXIF orientations turn as OpenCV turns them, a file of too
// many progressive scans is refused, corrupt files give a reason, and the quality of M/8 scaling
// against a whole decode plus an area resize (PSNR, printed).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#ifdef LTFIT_WITH_LIBJPEG_TURBO
#include <cstdio>

#include <jpeglib.h>

#include "data/decode.h"
#include "data/jpeg_decode.h"
#include "ltfit/util/random.h"
#include "support/test_support.h"

namespace {

using Bytes = std::vector<std::uint8_t>;

struct Encoding {
  const char* name;
  int h_samp = 2, v_samp = 2;  // the luma's sampling factors: 2×2 is 4:2:0, 1×1 is 4:4:4
  bool progressive = false;
  int restart_rows = 0;  // a restart marker every this many MCU rows
  bool grey = false;
};

const std::vector<Encoding> kEncodings = {
    {"4:2:0"},
    {"4:4:4", 1, 1},
    {"4:2:2", 2, 1},
    {"4:4:0", 1, 2},
    {"progressive", 2, 2, true},
    {"restart markers", 2, 2, false, 1},
    {"grey", 1, 1, false, 0, true},
};

// A photo-like test image: smooth gradients, edges of every direction and noise, seeded.
cv::Mat textured(int width, int height, std::uint64_t seed) {
  cv::Mat image(height, width, CV_8UC3);
  ltfit::SplitMix64 rng(seed);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      auto& p = image.at<cv::Vec3b>(y, x);
      const double n = rng.uniform(-20, 20);
      p[0] = cv::saturate_cast<std::uint8_t>(255.0 * x / width + n);
      p[1] = cv::saturate_cast<std::uint8_t>(255.0 * y / height - n);
      p[2] = cv::saturate_cast<std::uint8_t>(128 + 100 * std::sin((x + 2 * y) / 9.0) + n);
    }
  }
  for (int i = 0; i < 12; ++i) {
    const cv::Point centre(static_cast<int>(rng.uniform(0, width)),
                           static_cast<int>(rng.uniform(0, height)));
    cv::circle(image, centre, static_cast<int>(rng.uniform(4, width / 4.0)),
               cv::Scalar(rng.uniform(0, 255), rng.uniform(0, 255), rng.uniform(0, 255)), -1,
               cv::LINE_AA);
  }
  return image;
}

// `image` (BGR, or grey when asked) encoded as a JPEG through libjpeg, as `encoding` says; with
// `scans`, the progressive scan script.
Bytes encode(const cv::Mat& image, const Encoding& encoding,
             const std::vector<jpeg_scan_info>* scans = nullptr) {
  cv::Mat source = image;
  if (encoding.grey) cv::cvtColor(image, source, cv::COLOR_BGR2GRAY);
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr err{};
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &out, &size);
  cinfo.image_width = static_cast<JDIMENSION>(source.cols);
  cinfo.image_height = static_cast<JDIMENSION>(source.rows);
  cinfo.input_components = encoding.grey ? 1 : 3;
  cinfo.in_color_space = encoding.grey ? JCS_GRAYSCALE : JCS_EXT_BGR;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 90, TRUE);
  if (!encoding.grey) {
    cinfo.comp_info[0].h_samp_factor = encoding.h_samp;
    cinfo.comp_info[0].v_samp_factor = encoding.v_samp;
  }
  if (encoding.progressive) jpeg_simple_progression(&cinfo);
  if (scans != nullptr) {
    cinfo.scan_info = scans->data();
    cinfo.num_scans = static_cast<int>(scans->size());
  }
  cinfo.restart_in_rows = encoding.restart_rows;
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = source.ptr(static_cast<int>(cinfo.next_scanline));
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  Bytes bytes(out, out + size);
  std::free(out);
  return bytes;
}

ltfit::JpegDecoded decode(const Bytes& bytes, int eighths, ltfit::RegionOf region_of = {}) {
  ltfit::JpegDecoded decoded = ltfit::decode_jpeg(bytes, {eighths, std::move(region_of)});
  INFO(decoded.error);
  REQUIRE_FALSE(decoded.image.empty());
  return decoded;
}

bool same_pixels(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0;
}

double psnr(const cv::Mat& a, const cv::Mat& b) {
  cv::Mat diff;
  cv::absdiff(a, b, diff);
  diff.convertTo(diff, CV_64F);
  const cv::Scalar squared = cv::mean(diff.mul(diff));
  const double mse = (squared[0] + squared[1] + squared[2]) / 3;
  return mse == 0 ? 99.0 : 10.0 * std::log10(255.0 * 255.0 / mse);
}

}  // namespace

TEST_CASE("jpeg_eighths: the cheapest M/8 keeping the shorter side", "[data][jpeg]") {
  // 5/8 (235 px) and 6/8 would cover 224 px of 375, but their plain-C inverse DCT costs more than
  // a whole decode by SIMD; 1/2 gives 188 px, too few.
  CHECK(ltfit::jpeg_eighths(500, 375, 224) == 8);
  CHECK(ltfit::jpeg_eighths(500, 375, 188) == 4);
  CHECK(ltfit::jpeg_eighths(500, 375, 189) == 8);  // 3/8 would not cover, 5/8 costs more
  CHECK(ltfit::jpeg_eighths(375, 500, 47) == 1);   // 375 / 8 rounds up to 47
  CHECK(ltfit::jpeg_eighths(375, 500, 48) == 2);
  CHECK(ltfit::jpeg_eighths(375, 500, 0) == 8);
  CHECK(ltfit::jpeg_eighths(100, 100, 1000) == 8);  // nothing qualifies: full size
  CHECK(ltfit::jpeg_scaled_side(333, 3) == 125);    // ceil(124.875)
}

TEST_CASE("decode_jpeg: at OpenCV's scales, the pixels cv::imdecode gives", "[data][jpeg]") {
  const cv::Mat image = textured(333, 251, 7);
  for (const Encoding& encoding : kEncodings) {
    const Bytes bytes = encode(image, encoding);
    for (const auto& [eighths, flag] :
         std::vector<std::pair<int, int>>{{8, cv::IMREAD_COLOR},
                                          {4, cv::IMREAD_REDUCED_COLOR_2},
                                          {2, cv::IMREAD_REDUCED_COLOR_4},
                                          {1, cv::IMREAD_REDUCED_COLOR_8}}) {
      INFO(encoding.name << " at " << eighths << "/8");
      const ltfit::JpegDecoded ours = decode(bytes, eighths);
      const cv::Mat opencv = cv::imdecode(bytes, flag);
      CHECK(ours.region == cv::Rect(cv::Point(0, 0), ours.whole));
      CHECK(same_pixels(ours.image, opencv));
    }
  }
}

TEST_CASE("decode_jpeg: a region decode equals the whole decode there", "[data][jpeg]") {
  const cv::Mat image = textured(413, 307, 11);
  ltfit::SplitMix64 rng(3);
  int regions = 0;
  for (const Encoding& encoding : kEncodings) {
    const Bytes bytes = encode(image, encoding);
    for (int eighths = 1; eighths <= 8; ++eighths) {
      const ltfit::JpegDecoded whole = decode(bytes, eighths);
      CHECK(whole.whole == cv::Size(static_cast<int>(ltfit::jpeg_scaled_side(413, eighths)),
                                    static_cast<int>(ltfit::jpeg_scaled_side(307, eighths))));
      for (int trial = 0; trial < 6; ++trial) {
        const cv::Size s = whole.whole;
        const int x = static_cast<int>(rng.uniform(0, s.width - 1));
        const int y = static_cast<int>(rng.uniform(0, s.height - 1));
        const int w = 1 + static_cast<int>(rng.uniform(0, s.width - x - 1));
        const int h = 1 + static_cast<int>(rng.uniform(0, s.height - y - 1));
        const cv::Rect asked(x, y, w, h);
        const ltfit::JpegDecoded part =
            decode(bytes, eighths, [&](cv::Size size) { return size == s ? asked : cv::Rect(); });
        INFO(encoding.name << " at " << eighths << "/8, region " << asked << ", decoded "
                           << part.region);
        CHECK(part.whole == s);
        REQUIRE(part.region == asked);
        CHECK(same_pixels(part.image, whole.image(part.region)));
        ++regions;
      }
    }
  }
  CHECK(regions == static_cast<int>(kEncodings.size()) * 8 * 6);
}

TEST_CASE("decode_jpeg: EXIF orientations turn the image as OpenCV turns it", "[data][jpeg]") {
  const Bytes plain = encode(textured(96, 64, 5), kEncodings[0]);
  for (int orientation = 1; orientation <= 8; ++orientation) {
    // APP1 after SOI: "Exif\0\0", a little-endian TIFF header and one IFD entry, 0x0112 SHORT.
    const Bytes tiff = {'I',
                        'I',
                        42,
                        0,
                        8,
                        0,
                        0,
                        0,
                        1,
                        0,
                        0x12,
                        0x01,
                        3,
                        0,
                        1,
                        0,
                        0,
                        0,
                        static_cast<std::uint8_t>(orientation),
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0};
    Bytes app1 = {'E', 'x', 'i', 'f', 0, 0};
    app1.insert(app1.end(), tiff.begin(), tiff.end());
    CHECK(ltfit::exif_orientation(app1.data(), app1.size()) == orientation);
    Bytes bytes(plain.begin(), plain.begin() + 2);
    const std::size_t length = app1.size() + 2;
    bytes.insert(bytes.end(), {0xFF, 0xE1, static_cast<std::uint8_t>(length >> 8),
                               static_cast<std::uint8_t>(length & 0xFF)});
    bytes.insert(bytes.end(), app1.begin(), app1.end());
    bytes.insert(bytes.end(), plain.begin() + 2, plain.end());
    INFO("orientation " << orientation);
    // A region is asked for: only an upright image is cut, a turned one is decoded whole.
    const ltfit::JpegDecoded ours =
        decode(bytes, 8, [](cv::Size) { return cv::Rect(3, 4, 10, 10); });
    const cv::Mat opencv = cv::imdecode(bytes, cv::IMREAD_COLOR);
    CHECK(ours.whole == opencv.size());
    CHECK(same_pixels(ours.image, opencv(ours.region)));
    if (orientation == 1) {
      CHECK(ours.region == cv::Rect(3, 4, 10, 10));
    } else {
      CHECK(ours.region == cv::Rect(cv::Point(0, 0), ours.whole));
    }
  }
}

TEST_CASE("exif_orientation: short, foreign and bad blocks read as 1", "[data][jpeg]") {
  const Bytes good = {'E',  'x',  'i', 'f', 0, 0, 'M', 'M', 0, 42, 0, 0, 0, 8, 0, 1,
                      0x01, 0x12, 0,   3,   0, 0, 0,   1,   0, 6,  0, 0, 0, 0, 0, 0};
  CHECK(ltfit::exif_orientation(good.data(), good.size()) == 6);  // big-endian
  for (std::size_t cut = 0; cut < good.size() - 6; ++cut) {
    CHECK(ltfit::exif_orientation(good.data(), cut) == 1);
  }
  Bytes bad = good;
  bad[25] = 9;  // orientation 9 does not exist
  CHECK(ltfit::exif_orientation(bad.data(), bad.size()) == 1);
  bad = good;
  bad[13] = 0xF0;  // the IFD's offset points past the block
  CHECK(ltfit::exif_orientation(bad.data(), bad.size()) == 1);
  bad = good;
  bad[15] = 0xFF;                                               // 255 entries claimed, one present
  CHECK(ltfit::exif_orientation(bad.data(), bad.size()) == 6);  // found before the end
  bad[17] = 0x13;  // no 0x0112 tag, and entries claimed past the end
  CHECK(ltfit::exif_orientation(bad.data(), bad.size()) == 1);
}

TEST_CASE("decode_jpeg: a progressive file of over 500 scans is refused", "[data][jpeg]") {
  // A grey image's DC, then each AC coefficient alone in 9 successive-approximation scans:
  // 1 + 63 * 9 = 568 valid scans of a 64×64 image.
  std::vector<jpeg_scan_info> scans;
  scans.push_back({1, {0, 0, 0, 0}, 0, 0, 0, 0});
  for (int k = 1; k <= 63; ++k) {
    scans.push_back({1, {0, 0, 0, 0}, k, k, 0, 8});
    for (int al = 7; al >= 0; --al) scans.push_back({1, {0, 0, 0, 0}, k, k, al + 1, al});
  }
  Encoding grey = kEncodings.back();
  grey.progressive = true;
  const Bytes many = encode(textured(64, 64, 1), grey, &scans);
  const ltfit::JpegDecoded refused = ltfit::decode_jpeg(many, {8, {}});
  CHECK(refused.image.empty());
  CHECK(refused.error == "progressive JPEG of over 500 scans");
  // OpenCV would decode it; a file of few scans decodes.
  CHECK_FALSE(cv::imdecode(many, cv::IMREAD_COLOR).empty());
  scans.resize(400);
  CHECK_FALSE(ltfit::decode_jpeg(encode(textured(64, 64, 1), grey, &scans), {8, {}}).image.empty());
}

TEST_CASE("decode_jpeg: corrupt and foreign bytes give libjpeg's reason", "[data][jpeg]") {
  const Bytes good = encode(textured(64, 48, 2), kEncodings[0]);
  const Bytes png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  CHECK_THAT(ltfit::decode_jpeg(png, {8, {}}).error, Catch::Contains("Not a JPEG file"));
  CHECK_FALSE(ltfit::decode_jpeg({}, {8, {}}).error.empty());
  Bytes cut(good.begin(), good.begin() + 40);  // in the middle of the tables
  CHECK(ltfit::decode_jpeg(cut, {8, {}}).image.empty());
  // Every single-byte corruption of the header either decodes or gives a reason, never a crash.
  int refused = 0;
  for (std::size_t at = 2; at < 200 && at < good.size(); ++at) {
    Bytes bad = good;
    bad[at] ^= 0x5A;
    const ltfit::JpegDecoded decoded = ltfit::decode_jpeg(bad, {5, {}});
    if (decoded.image.empty()) {
      CHECK_FALSE(decoded.error.empty());
      ++refused;
    }
  }
  CHECK(refused > 0);
}

TEST_CASE("decode_jpeg: M/8 scaling against a whole decode and an area resize (PSNR)",
          "[data][jpeg]") {
  // The fixed set: 8 photo-like images of the study's sizes (500×375 and 375×500, seeds 1..8).
  for (int eighths = 3; eighths <= 7; ++eighths) {
    double worst = 99, sum = 0;
    for (int seed = 1; seed <= 8; ++seed) {
      const cv::Mat image = seed % 2 ? textured(500, 375, seed) : textured(375, 500, seed);
      const Bytes bytes = encode(image, kEncodings[0]);
      const cv::Mat scaled = decode(bytes, eighths).image;
      cv::Mat resized;
      cv::resize(cv::imdecode(bytes, cv::IMREAD_COLOR), resized, scaled.size(), 0, 0,
                 cv::INTER_AREA);
      const double db = psnr(scaled, resized);
      worst = std::min(worst, db);
      sum += db;
    }
    WARN("JPEG scaled by " << eighths << "/8 against full decode + INTER_AREA: PSNR mean "
                           << sum / 8 << " dB, worst " << worst << " dB");
    CHECK(worst > 27.0);  // measured 28.8 (3/8) to 33.2 (4/8); a misplaced pixel grid gives < 20
  }
}

TEST_CASE("decode_bgr: a region request decodes the JPEG's part, other formats whole",
          "[data][jpeg]") {
  const cv::Mat image = textured(400, 300, 9);
  const ltfit::testing::TempDir dir;
  const std::string jpg = (dir.path() / "region.jpg").string();
  const std::string png = (dir.path() / "region.png").string();
  REQUIRE(cv::imwrite(jpg, image));
  REQUIRE(cv::imwrite(png, image));
  const ltfit::DecodeRequest request{150, [](cv::Size) { return cv::Rect(40, 30, 50, 60); }};
  std::string error;
  const ltfit::DecodedImage part = ltfit::decode_bgr(jpg, request, {}, &error);
  INFO(error);
  CHECK(part.whole == cv::Size(200, 150));  // 4/8: the cheapest M/8 keeping 150 px
  CHECK(part.region == cv::Rect(40, 30, 50, 60));
  CHECK(part.image.size() == cv::Size(50, 60));
  const ltfit::DecodedImage whole = ltfit::decode_bgr(png, request, {}, &error);
  CHECK(whole.whole == cv::Size(400, 300));
  CHECK(whole.region == cv::Rect(0, 0, 400, 300));
}

#else

TEST_CASE("decode_jpeg: built without libjpeg-turbo", "[data][jpeg]") {
  WARN("SKIPPED: built without libjpeg-turbo (LTFIT_WITH_LIBJPEG_TURBO): OpenCV decodes JPEGs");
}

#endif
