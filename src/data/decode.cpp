// Reading and decoding one image file; see decode.h.
#include "data/decode.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <vector>

#include <opencv2/imgcodecs.hpp>

namespace ltfit {
namespace {

namespace fs = std::filesystem;

constexpr std::uintmax_t kMaxFileBytes = 1ULL << 30;  // refuse files over 1 GiB

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

// IMREAD_COLOR, or the most reduced JPEG decode that keeps the shorter side >= min_short_side.
int decode_flags(const std::vector<uchar>& bytes, double min_short_side) {
  if (!(min_short_side > 0) || !is_jpeg(bytes)) return cv::IMREAD_COLOR;
  const JpegSize jpeg = jpeg_size(bytes);
  const int short_side = std::min(jpeg.width, jpeg.height);
  if (short_side <= 0) return cv::IMREAD_COLOR;
  for (const int factor : {8, 4, 2}) {
    if (short_side / factor >= min_short_side) {
      return factor == 8   ? cv::IMREAD_REDUCED_COLOR_8
             : factor == 4 ? cv::IMREAD_REDUCED_COLOR_4
                           : cv::IMREAD_REDUCED_COLOR_2;
    }
  }
  return cv::IMREAD_COLOR;
}

}  // namespace

cv::Mat decode_bgr(const std::string& path, double min_short_side, std::string* error) {
  std::vector<uchar> bytes;
  if (!read_bytes(path, &bytes, error)) return {};
  if (is_jpeg(bytes) && !jpeg_complete(bytes)) {
    *error = "truncated JPEG (no end-of-image marker)";
    return {};
  }
  cv::Mat image = cv::imdecode(bytes, decode_flags(bytes, min_short_side));
  if (image.empty()) {
    *error = "not a decodable image";
  } else if (image.type() != CV_8UC3) {
    *error = "decoded to an unexpected pixel type " + std::to_string(image.type());
    image.release();
  }
  return image;
}

}  // namespace ltfit
