// Decoding one image file into a square RGB uint8 tensor with OpenCV.
//
// The file is read into memory first, which lets us reject empty and truncated JPEGs (libjpeg
// would silently pad them with grey) and read the JPEG header to decode large files at 1/2,
// 1/4 or 1/8 scale when the crop still has at least `size` pixels, which is several times
// faster. EXIF orientation is applied (plain IMREAD_COLOR). Grey, 16-bit and RGBA files come
// out as 8-bit RGB. Never throws: every failure becomes nullopt plus a reason. Thread-safe.
#include "ltfit/data/image_io.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <torch/torch.h>

namespace ltfit {
namespace {

namespace fs = std::filesystem;

constexpr std::uintmax_t kMaxFileBytes = 1ULL << 30;  // refuse files over 1 GiB
constexpr int kMaxOutputSize = 1 << 14;

struct JpegSize {
  int width = 0;
  int height = 0;
};

bool is_jpeg(const std::vector<uchar>& bytes) {
  return bytes.size() >= 4 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF;
}

int read_be16(const std::vector<uchar>& bytes, size_t pos) {
  return (bytes[pos] << 8) | bytes[pos + 1];
}

// Width and height from the JPEG's SOF segment, or {0,0} when the header cannot be parsed.
JpegSize jpeg_size(const std::vector<uchar>& bytes) {
  size_t pos = 2;
  while (pos + 9 < bytes.size()) {
    if (bytes[pos] != 0xFF) return {};
    const int marker = bytes[pos + 1];
    if (marker == 0xFF) {  // fill byte
      ++pos;
      continue;
    }
    const bool standalone = marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8);
    if (standalone) {
      pos += 2;
      continue;
    }
    const bool sof =
        marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (sof) return {read_be16(bytes, pos + 7), read_be16(bytes, pos + 5)};
    if (marker == 0xDA || marker == 0xD9) return {};  // scan data before any frame header
    pos += 2 + static_cast<size_t>(read_be16(bytes, pos + 2));
  }
  return {};
}

// A JPEG is complete when, scanning back from its end, the EOI marker comes before the start
// of the last scan (entropy-coded data never contains FF D9 or FF DA).
bool jpeg_complete(const std::vector<uchar>& bytes) {
  for (size_t i = bytes.size() - 1; i >= 1; --i) {
    if (bytes[i - 1] != 0xFF) continue;
    if (bytes[i] == 0xD9) return true;
    if (bytes[i] == 0xDA) return false;
  }
  return false;
}

// Reads a whole file; returns false with `error` set when it cannot.
bool read_bytes(const std::string& path, std::vector<uchar>* bytes, std::string* error) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return *error = "file not found", false;
  if (fs::is_directory(status)) return *error = "is a directory, not an image", false;
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) return *error = "cannot read the file size: " + ec.message(), false;
  if (size == 0) return *error = "empty file (0 bytes)", false;
  if (size > kMaxFileBytes)
    return *error = "file too large (" + std::to_string(size) + " bytes)", false;
  std::ifstream in(path, std::ios::binary);
  if (!in) return *error = "cannot open: " + std::generic_category().message(errno), false;
  bytes->resize(static_cast<size_t>(size));
  in.read(reinterpret_cast<char*>(bytes->data()), static_cast<std::streamsize>(size));
  if (in.gcount() != static_cast<std::streamsize>(size)) return *error = "short read", false;
  return true;
}

// IMREAD_COLOR, or a reduced-size JPEG decode when the crop keeps at least `size` pixels.
int decode_flags(const std::vector<uchar>& bytes, int size, double scale) {
  const JpegSize jpeg = jpeg_size(bytes);
  const int short_side = std::min(jpeg.width, jpeg.height);
  if (short_side <= 0) return cv::IMREAD_COLOR;
  for (const int factor : {8, 4, 2}) {
    if (static_cast<double>(short_side / factor) * scale >= size) {
      return factor == 8   ? cv::IMREAD_REDUCED_COLOR_8
             : factor == 4 ? cv::IMREAD_REDUCED_COLOR_4
                           : cv::IMREAD_REDUCED_COLOR_2;
    }
  }
  return cv::IMREAD_COLOR;
}

cv::Mat decode(const std::vector<uchar>& bytes, int size, const CropFlip& crop,
               std::string* error) {
  if (is_jpeg(bytes) && !jpeg_complete(bytes)) {
    *error = "truncated JPEG (no end-of-image marker)";
    return {};
  }
  cv::Mat image = cv::imdecode(bytes, decode_flags(bytes, size, crop.scale));
  if (image.empty()) {
    *error = "not a decodable image";
  } else if (image.type() != CV_8UC3) {
    *error = "decoded to an unexpected pixel type " + std::to_string(image.type());
    image.release();
  }
  return image;
}

double clamped_fraction(double value) {
  return std::isfinite(value) ? std::clamp(value, 0.0, 1.0) : 0.5;
}

// The square region of `image` described by `crop`.
cv::Rect crop_rect(const cv::Mat& image, const CropFlip& crop) {
  const int short_side = std::min(image.rows, image.cols);
  const double scale = std::clamp(crop.scale, 0.0, 1.0);
  const int side = std::clamp(static_cast<int>(std::lround(scale * short_side)), 1, short_side);
  const int x =
      static_cast<int>(std::lround(clamped_fraction(crop.offset_x) * (image.cols - side)));
  const int y =
      static_cast<int>(std::lround(clamped_fraction(crop.offset_y) * (image.rows - side)));
  return {x, y, side, side};
}

// Crops, resizes, flips and converts BGR→RGB straight into a new tensor. [size,size,3] uint8.
torch::Tensor to_square_rgb(const cv::Mat& image, int size, const CropFlip& crop) {
  const cv::Mat region = image(crop_rect(image, crop));
  cv::Mat resized;
  const int interpolation = region.cols > size ? cv::INTER_AREA : cv::INTER_LINEAR;
  cv::resize(region, resized, cv::Size(size, size), 0, 0, interpolation);
  if (crop.flip) {
    cv::Mat mirrored;
    cv::flip(resized, mirrored, 1);
    resized = mirrored;
  }
  torch::Tensor out = torch::empty({size, size, 3}, torch::kUInt8);
  cv::Mat rgb(size, size, CV_8UC3, out.data_ptr<std::uint8_t>());
  cv::cvtColor(resized, rgb, cv::COLOR_BGR2RGB);
  if (rgb.data != out.data_ptr<std::uint8_t>()) {  // OpenCV reallocated: copy it over
    std::memcpy(out.data_ptr<std::uint8_t>(), rgb.data, static_cast<size_t>(size) * size * 3);
  }
  return out;
}

}  // namespace

std::optional<torch::Tensor> load_square_image(const std::string& path, int size,
                                               const CropFlip& crop, std::string* error) {
  std::string reason;
  std::optional<torch::Tensor> result;
  try {
    std::vector<uchar> bytes;
    if (size <= 0 || size > kMaxOutputSize) {
      reason = "invalid output size " + std::to_string(size);
    } else if (!(crop.scale > 0.0)) {
      reason = "invalid crop scale " + std::to_string(crop.scale);
    } else if (read_bytes(path, &bytes, &reason)) {
      const cv::Mat image = decode(bytes, size, crop, &reason);
      if (!image.empty()) result = to_square_rgb(image, size, crop);
    }
  } catch (const std::exception& e) {  // cv::Exception, std::bad_alloc, c10::Error
    reason = std::string("decode failed: ") + e.what();
    result.reset();
  } catch (...) {
    reason = "decode failed: unknown exception";
    result.reset();
  }
  if (!result && error) *error = reason.empty() ? "unknown error" : reason;
  return result;
}

}  // namespace ltfit
