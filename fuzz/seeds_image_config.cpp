// Seeds of the image header and config targets: small images OpenCV encodes in every format
// it writes, headers claiming huge sizes, signatures of formats never decoded; the repository's
// configs with a `--set` line, and YAML edge cases.
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "formats/zip_archive.h"
#include "ltfit/config/config_loader.h"
#include "seeds.h"

namespace ltfit::fuzz {

namespace {

// A small test image of `type` (JPEG 2000 needs a side of 32 for its default 6 resolutions).
cv::Mat gradient(int type, int width, int height) {
  cv::Mat bgr(height, width, CV_8UC3);
  for (int y = 0; y < bgr.rows; ++y) {
    for (int x = 0; x < bgr.cols; ++x) bgr.at<cv::Vec3b>(y, x) = cv::Vec3b(x * 4, y * 6, 99);
  }
  cv::Mat out;
  switch (type) {
    case CV_8UC1:
      cv::cvtColor(bgr, out, cv::COLOR_BGR2GRAY);
      break;
    case CV_8UC4:
      cv::cvtColor(bgr, out, cv::COLOR_BGR2BGRA);
      break;
    case CV_16UC1:
      cv::cvtColor(bgr, out, cv::COLOR_BGR2GRAY);
      out.convertTo(out, CV_16U, 257);
      break;
    case CV_16UC3:
      bgr.convertTo(out, CV_16U, 257);
      break;
    case CV_32FC1:
      cv::cvtColor(bgr, out, cv::COLOR_BGR2GRAY);
      out.convertTo(out, CV_32F, 1 / 255.0);
      break;
    case CV_32FC3:
      bgr.convertTo(out, CV_32F, 1 / 255.0);
      break;
    default:
      out = bgr;
  }
  return out;
}

// `ext` as OpenCV writes it, or "" when this OpenCV build cannot.
std::string encode(const char* ext, int type, std::vector<int> params = {}) {
  const bool jp2 = std::string_view(ext) == ".jp2";
  std::vector<uchar> bytes;
  try {
    if (!cv::imencode(ext, gradient(type, jp2 ? 40 : 12, jp2 ? 32 : 8), bytes, params)) return "";
  } catch (const cv::Exception&) {
    return "";
  }
  return std::string(bytes.begin(), bytes.end());
}

void put_be16(std::string& s, std::size_t at, unsigned v) {
  s[at] = char(v >> 8);
  s[at + 1] = char(v & 0xff);
}

// A progressive JPEG whose frame header claims 40000x40000.
std::string huge_progressive_jpeg() {
  std::string jpeg = encode(".jpg", CV_8UC3, {cv::IMWRITE_JPEG_PROGRESSIVE, 1});
  const std::size_t sof = jpeg.find("\xff\xc2");
  if (sof == std::string::npos) return "";
  put_be16(jpeg, sof + 5, 40000);
  put_be16(jpeg, sof + 7, 40000);
  return jpeg;
}

// A PNG whose IHDR claims 65000x65000 (with its CRC fixed, as a crafted file would have).
std::string huge_png() {
  std::string png = encode(".png", CV_8UC3);
  if (png.size() < 33) return "";
  for (int i = 0; i < 4; ++i) png[16 + i] = char((65000u >> (24 - 8 * i)) & 0xff);
  for (int i = 0; i < 4; ++i) png[20 + i] = char((65000u >> (24 - 8 * i)) & 0xff);
  const std::uint32_t crc = zip::crc32_of(std::string_view(png).substr(12, 17));
  for (int i = 0; i < 4; ++i) png[29 + i] = char((crc >> (24 - 8 * i)) & 0xff);
  return png;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

std::vector<Seed> jpeg_seeds() {
  // 4 control bytes (scale, region corner and side; jpeg_target.cpp), then a JPEG of 40×24.
  struct Encoded {
    const char* name;
    int type;
    std::vector<int> params;
    std::string control;
  };
  const Encoded encoded[] = {
      {"baseline-whole", CV_8UC3, {}, std::string("\x07\x00\x00\xff", 4)},
      {"baseline-region", CV_8UC3, {}, std::string("\x07\x40\x30\x40", 4)},
      {"scaled-5-8-region", CV_8UC3, {}, std::string("\x04\x20\x20\x80", 4)},
      {"progressive-region", CV_8UC3, {cv::IMWRITE_JPEG_PROGRESSIVE, 1}, "\x03\x10\x60\x50"},
      {"restarts-region", CV_8UC3, {cv::IMWRITE_JPEG_RST_INTERVAL, 1}, "\x07\x50\x10\x30"},
      {"grey-region", CV_8UC1, {}, "\x05\x30\x30\x60"},
  };
  std::vector<Seed> seeds;
  for (const Encoded& e : encoded) {
    std::vector<uchar> bytes;
    cv::imencode(".jpg", gradient(e.type, 40, 24), bytes, e.params);
    seeds.push_back({e.name, e.control + std::string(bytes.begin(), bytes.end())});
  }
  // EXIF orientation 6 in an APP1 after SOI: "Exif\0\0", a little-endian TIFF, one entry.
  const std::string tiff("II*\0\x08\0\0\0\x01\0\x12\x01\x03\0\x01\0\0\0\x06\0\0\0\0\0\0\0", 26);
  const std::string app1 =
      std::string("\xff\xe1\0", 3) + char(2 + 6 + tiff.size()) + std::string("Exif\0\0", 6) + tiff;
  const std::string plain = seeds.front().bytes.substr(4);
  seeds.push_back({"exif-rotated", std::string("\x07\x10\x10\x40", 4) + plain.substr(0, 2) + app1 +
                                       plain.substr(2)});
  seeds.push_back(
      {"not-a-jpeg", std::string("\x07\0\0\0", 4) + encode(".png", CV_8UC3), Expect::kRefused});
  return seeds;
}

std::vector<Seed> image_header_seeds() {
  struct Encoded {
    const char* name;
    const char* ext;
    int type;
    std::vector<int> params;
  };
  const Encoded encoded[] = {
      {"jpeg", ".jpg", CV_8UC3, {}},
      {"jpeg-progressive", ".jpg", CV_8UC3, {cv::IMWRITE_JPEG_PROGRESSIVE, 1}},
      {"jpeg-gray", ".jpg", CV_8UC1, {}},
      {"png", ".png", CV_8UC3, {}},
      {"png-16bit-gray", ".png", CV_16UC1, {}},
      {"png-bgra", ".png", CV_8UC4, {}},
      {"webp", ".webp", CV_8UC3, {}},
      {"bmp", ".bmp", CV_8UC3, {}},
      {"bmp-gray", ".bmp", CV_8UC1, {}},
      {"tiff", ".tiff", CV_8UC3, {}},
      {"tiff-16bit", ".tiff", CV_16UC3, {}},
      {"tiff-float", ".tiff", CV_32FC3, {}},
      {"pgm", ".pgm", CV_8UC1, {}},
      {"ppm", ".ppm", CV_8UC3, {}},
      {"pbm", ".pbm", CV_8UC1, {}},
      {"pam", ".pam", CV_8UC3, {}},
      {"pfm", ".pfm", CV_32FC3, {}},
      {"sunraster", ".ras", CV_8UC3, {}},
      {"hdr", ".hdr", CV_32FC3, {}},
      {"exr", ".exr", CV_32FC3, {}},
      {"jpeg2000", ".jp2", CV_8UC3, {}},
  };
  std::vector<Seed> seeds;
  for (const Encoded& e : encoded) {
    std::string bytes = encode(e.ext, e.type, e.params);
    if (bytes.empty()) {
      std::fprintf(stderr, "note: this OpenCV cannot write %s; no %s seed\n", e.ext, e.name);
      continue;
    }
    seeds.push_back({e.name, std::move(bytes)});
  }
  if (std::string jpeg = huge_progressive_jpeg(); !jpeg.empty()) {
    seeds.push_back({"huge-progressive-jpeg", jpeg});
  }
  if (std::string png = huge_png(); !png.empty()) seeds.push_back({"huge-png", png});
  std::string gif("GIF89a\x10\x00\x08\x00\x00\x00\x00", 13);
  seeds.push_back({"gif", gif + ";", Expect::kAny});
  seeds.push_back({"dicom", std::string(128, '\0') + "DICM" + std::string(64, '\0'), Expect::kAny});
  seeds.push_back({"nitf", "NITF02.10" + std::string(400, ' '), Expect::kAny});
  seeds.push_back({"bigtiff", std::string("II+\0\x08\0\0\0\x10\0\0\0\0\0\0\0", 16), Expect::kAny});
  seeds.push_back(
      {"j2k-codestream",
       std::string("\xff\x4f\xff\x51\x00\x29\x00\x00\x00\x00\x00\x10\x00\x00\x00\x08", 16) +
           std::string(40, '\0'),
       Expect::kAny});
  seeds.push_back({"exr-magic",
                   std::string("\x76\x2f\x31\x01\x02\0\0\0", 8) + std::string(64, '\0'),
                   Expect::kAny});
  seeds.push_back({"text", "hello, not an image\n", Expect::kRefused});
  return seeds;
}

std::vector<Seed> config_seeds(const std::filesystem::path& repo) {
  std::vector<Seed> seeds = {
      {"default", "train.lr=0.01\n" + to_yaml(Config{})},
      {"empty", "data.batch_size=64\n", Expect::kAny},
      {"override-list", "train.lr=[1.0e-5, 1.0e-3]\nmodel:\n  arch: resnet18\n", Expect::kAny},
      {"override-formats", "data.formats=[jpeg, png, hdr]\ndata:\n  max_pixels: null\n",
       Expect::kAny},
      {"hostile-unknown-key", "x=1\nrun:\n  nmae: x\n", Expect::kRefused},
      {"hostile-anchors",
       "model.arch=resnet18\nx: &a [a, a, a, a, a, a, a, a]\ny: &b [*a, *a, *a, *a, *a, *a, *a, "
       "*a]\n"
       "z: [*b, *b, *b, *b, *b, *b, *b, *b]\n",
       Expect::kRefused},
      {"hostile-deep", "a=b\nrun: " + std::string(3000, '[') + std::string(3000, ']') + "\n",
       Expect::kRefused},
      {"hostile-huge-number", "train.lr=1e308\ntrain:\n  epochs: 99999999999999999999\n",
       Expect::kRefused},
  };
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(repo / "configs", ec)) {
    if (entry.path().extension() != ".yaml") continue;
    seeds.push_back(
        {"repo-" + entry.path().stem().string(), "run.seed=7\n" + read_text(entry.path())});
  }
  return seeds;
}

std::string config_dictionary() {
  std::set<std::string> tokens = {"null", "true", "false", "auto",  "[",     "]",  "{",   "}",
                                  "&a",   "*a",   "<<:",   "!!str", "!!int", "- ", ": ",  "=",
                                  ".",    "\\n",  "1e308", "nan",   ".inf",  "-1", "0x10"};
  std::istringstream yaml(to_yaml(Config{}));
  for (std::string line; std::getline(yaml, line);) {
    const std::size_t start = line.find_first_not_of(' ');
    const std::size_t colon = line.find(':');
    if (start == std::string::npos || colon == std::string::npos || colon < start) continue;
    tokens.insert(line.substr(start, colon - start));
    std::string value = line.substr(colon + 1);
    if (const std::size_t v = value.find_first_not_of(' '); v != std::string::npos) {
      value = value.substr(v);
      if (value.size() < 24 && value.find('"') == std::string::npos) tokens.insert(value);
    }
  }
  std::string out;
  for (const std::string& t : tokens) {
    if (t.find('"') != std::string::npos || t.find('\\') != std::string::npos) continue;
    out += "\"" + t + "\"\n";
  }
  return out;
}

std::vector<Seed> resample_seeds() {
  // resample_target.cpp's layout: width - 1, height - 1, resize - 1, crop - 1 (16-bit little
  // endian), flags (bit 0 bicubic, bit 1 flat), then pixels.
  const auto seed = [](int width, int height, int resize, int crop, int flags) {
    std::string bytes;
    for (const int v : {width - 1, height - 1, resize - 1, crop - 1}) {
      bytes += static_cast<char>(v & 0xff);
      bytes += static_cast<char>(v >> 8);
    }
    bytes += static_cast<char>(flags);
    for (int i = 0; i < 97; ++i) bytes += static_cast<char>((i * 53) & 0xff);
    return bytes;
  };
  return {
      {"shrink-bilinear", seed(300, 200, 128, 112, 0)},
      {"shrink-bicubic", seed(157, 143, 100, 99, 1)},
      {"enlarge-bicubic", seed(40, 30, 200, 188, 1)},
      {"flat-bicubic", seed(97, 151, 255, 224, 3)},
      {"flat-bilinear", seed(151, 97, 64, 60, 2)},
      {"same-size", seed(120, 150, 120, 100, 0)},
      {"strip", seed(1, 160, 256, 100, 1)},
  };
}

}  // namespace ltfit::fuzz
