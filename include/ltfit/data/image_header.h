// An image file's format and dimensions, read from its first bytes before any decoder runs,
// and the limits a file must pass to be decoded (data.max_pixels, data.formats).
//
// A decoder allocates what the header claims: a 4 KB progressive JPEG that claims 40000x40000
// makes libjpeg allocate gigabytes before reading a single pixel. So the loader reads the header
// itself, refuses what is over the pixel budget or of a format not asked for, and only then hands
// the bytes to OpenCV. Formats are identified by content in the order OpenCV's imdecode tries its
// decoders (BMP, Radiance HDR, JPEG, WebP, Sun raster, PNM, PAM, PFM, TIFF, PNG, DICOM,
// JPEG 2000, OpenEXR, GDAL), and the dimensions are read the way each decoder reads them, so the
// size checked is the size the decoder will allocate for. A file whose bytes match two decoders'
// signatures is refused as ambiguous. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ltfit/config/config.h"

namespace ltfit {

enum class ImageFormat {
  kJpeg,
  kPng,
  kWebp,
  kBmp,
  kTiff,
  kPnm,  // PBM/PGM/PPM (P1-P6) and PAM (P7)
  kPfm,
  kSunRaster,
  kHdr,  // Radiance RGBE
  kExr,
  kJpeg2000,  // JP2 file or raw J2K codestream
  kGif,       // recognised for the message; not decoded by this build
  kDicom,     // OpenCV would hand it to GDCM; never decoded
  kGdal,      // NITF or DTED, which OpenCV would hand to GDAL; never decoded
};

// The name used in data.formats and in messages ("jpeg", "tiff", "hdr", ...).
std::string image_format_name(ImageFormat format);

// The format named `name` in data.formats (one of kImageFormatNames), or nullopt.
std::optional<ImageFormat> image_format_from_name(const std::string& name);

struct ImageHeader {
  ImageFormat format = ImageFormat::kJpeg;
  std::uint64_t width = 0;   // pixels, as the decoder will read it
  std::uint64_t height = 0;  // pixels
  int channels = 0;          // samples per pixel as stored
  int bits_per_sample = 8;   // as stored
  // TIFF: the tile (or strip) the decoder buffers whole, in pixels; 0 when not a TIFF.
  std::uint64_t tile_width = 0;
  std::uint64_t tile_height = 0;
  // Bytes the decoder allocates besides the 8-bit output image, estimated from the header:
  // libjpeg's whole-image coefficient buffer (progressive or multi-scan JPEG, at full size even
  // for a reduced-scale decode), a TIFF tile buffer, the float planes of HDR/PFM/EXR, ...
  std::uint64_t work_bytes = 0;

  std::uint64_t pixels() const;       // width * height, saturating
  std::uint64_t tile_pixels() const;  // tile_width * tile_height, saturating
};

// Random access to a file's bytes: copies up to `size` bytes at `offset` into `out` and returns
// how many it copied (fewer only at the end of the data).
using ByteReader =
    std::function<std::size_t(std::uint64_t offset, std::size_t size, std::uint8_t* out)>;

// The header of an image of `total_size` bytes, or nullopt with `error` set ("not a decodable
// image (unrecognised format; first bytes 68 65 6c 6c)", "invalid PNG header: ..."). Reads a
// bounded number of bytes (at most a few MiB, however the file is crafted).
std::optional<ImageHeader> read_image_header(const ByteReader& read, std::uint64_t total_size,
                                             std::string* error);

// The same over bytes in memory (tests, fuzzing).
std::optional<ImageHeader> read_image_header(std::span<const std::uint8_t> bytes,
                                             std::string* error);

// What a file must pass before it is decoded.
// The defaults equal image_limits(DataConfig{}).
struct ImageLimits {
  std::uint64_t max_pixels = DataConfig{}.max_pixels;  // width * height; 0 = no limit
  std::vector<ImageFormat> formats = {ImageFormat::kJpeg, ImageFormat::kPng, ImageFormat::kWebp,
                                      ImageFormat::kBmp, ImageFormat::kTiff};  // decoded formats
};

// The limits data.max_pixels and data.formats ask for.
ImageLimits image_limits(const DataConfig& data);

// "" when `header` passes `limits`, else why not, naming the key to change: "image is
// 40000×40000 = 1600000000 pixels, over data.max_pixels (89478485); raise data.max_pixels to
// allow it", "format hdr not in data.formats (jpeg, png, webp, bmp, tiff)".
std::string check_image_limits(const ImageHeader& header, const ImageLimits& limits);

}  // namespace ltfit
