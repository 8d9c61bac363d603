// Decoding a JPEG held in memory through libjpeg-turbo's libjpeg API (private to src/data).
//
// What it saves over cv::imdecode:
// - its own overhead: the same libjpeg writes BGR rows straight into the image, where OpenCV's
//   imdecode takes 2.2× as long for the same pixels (486×487 4:2:0: 0.62 against 1.33 ms);
// - scaling in the DCT domain by M/8 at the scale that is cheapest while still covering what the
//   caller needs (jpeg_eighths);
// - decoding only the rows and columns the caller reads (jpeg_skip_scanlines,
//   jpeg_crop_scanline): the entropy decoder still reads the whole scan, but the inverse DCT,
//   upsampling and colour conversion run for the region alone.
// TurboJPEG (libturbojpeg) offers the scaling but, before its version 3, no cropping; both come
// from the libjpeg API of the same library. Hostile files: libjpeg's errors return here as a
// reason (never an exit or a throw through C code), its warnings are counted and the image kept
// as OpenCV keeps it, and a progressive file of more than kMaxJpegScans scans is refused (each scan
// re-reads the whole coefficient buffer: a small file of thousands of scans would take minutes).
// decode_jpeg and exif_orientation are built only with libjpeg-turbo (LTFIT_WITH_LIBJPEG_TURBO;
// without it decode.cpp gives every JPEG to OpenCV); the scale choice (jpeg_scale.cpp) always.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace ltfit {

constexpr int kMaxJpegScans = 500;

// The rectangle of the whole decoded image (scaled, oriented) the caller will read, given that
// image's size; what lies outside may be left undecoded.
using RegionOf = std::function<cv::Rect(cv::Size whole)>;

struct JpegRequest {
  int eighths = 8;     // the scale, M/8 with M in 1..8
  RegionOf region_of;  // empty: the whole image
};

struct JpegDecoded {
  cv::Mat image;             // CV_8UC3 BGR: `region` of the whole decoded image; empty on failure
  cv::Rect region;           // where `image` lies in the whole decoded image: what was asked for
  cv::Size whole;            // the whole decoded image's size (scaled and EXIF-oriented)
  int warnings = 0;          // corrupt data libjpeg decoded around ("premature end of data")
  bool unsupported = false;  // a colour space this decoder leaves to OpenCV (CMYK, YCCK)
  std::string error;         // why the decode failed, from libjpeg ("Bogus marker length")
};

// The M (1..8) of the cheapest M/8 scale whose JPEG of `width`×`height` keeps its shorter side
// at least `min_short_side` (libjpeg rounds each side up); 8 when min_short_side <= 0 or no scale
// does. Cheapest by output pixels times the per-pixel cost of libjpeg-turbo's inverse DCT at M:
// SIMD code for 1, 2, 4 and 8, plain C for the others, with chroma upsampled by a 10×10 to 14×14
// inverse DCT, about 4× the cost a pixel (measured, 486×487 4:2:0: 5/8 0.80 ms, 8/8 0.62 ms). So
// with today's libjpeg-turbo the choice is the smallest power of two that covers, as OpenCV's
// reduced decodes are; the other M stay exact and tested for when their cost changes.
int jpeg_eighths(std::uint64_t width, std::uint64_t height, double min_short_side);

// The side `side` pixels long becomes at scale M/8.
std::uint64_t jpeg_scaled_side(std::uint64_t side, int eighths);

// The EXIF orientation (1..8) in a JPEG's APP1 segment `exif` (its bytes after the marker's
// length field), or 1 when it has none or cannot be read. Bounds-checked: reads only `exif`.
int exif_orientation(const std::uint8_t* exif, std::size_t size);

// Decodes the JPEG in `bytes` as `request` asks. Never throws for a bad file (its reason is in
// `error`); may throw std::bad_alloc or cv::Exception when memory runs out. Thread-safe.
JpegDecoded decode_jpeg(const std::vector<std::uint8_t>& bytes, const JpegRequest& request);

}  // namespace ltfit
