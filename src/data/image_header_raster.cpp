// Header parsers for JPEG, PNG, WebP, BMP, Sun raster and GIF (image_header_parsers.h). Each
// follows its decoder: libjpeg-turbo's marker reader (jdmarker.c), libpng's IHDR, libwebp's
// WebPGetFeatures, OpenCV's BmpDecoder/SunRasterDecoder::readHeader.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>

#include "data/image_header_parsers.h"

namespace ltfit::header_internal {
namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0); }

// ---- JPEG -------------------------------------------------------------------------------------

struct JpegFrame {
  ImageHeader header;
  bool progressive = false;
  std::array<int, 10> h{};  // sampling factors per component
  std::array<int, 10> v{};
};

constexpr int kMaxJpegMarkers = 4096;               // markers before the first scan
constexpr std::uint64_t kMaxJpegGarbage = 1 << 16;  // stray bytes skipped between markers

// libjpeg's next_marker(): skips stray bytes, then fill bytes; returns the marker code and
// leaves `pos` after it.
std::optional<int> next_marker(HeaderSource& s, std::uint64_t& pos) {
  std::uint64_t garbage = 0;
  for (;;) {
    auto c = s.u8(pos++);
    if (!c) return std::nullopt;
    while (*c != 0xFF) {
      if (++garbage > kMaxJpegGarbage || !(c = s.u8(pos++))) return std::nullopt;
    }
    do {
      if (!(c = s.u8(pos++))) return std::nullopt;
    } while (*c == 0xFF);
    if (*c != 0) return *c;
    garbage += 2;  // FF 00 is stuffing, not a marker: keep looking
  }
}

// A frame header (SOFn) at `pos` (after the marker), checked as libjpeg's get_sof does.
Result read_sof(HeaderSource& s, std::uint64_t pos, JpegFrame& frame, std::string* error) {
  const auto length = s.be(pos, 2);
  const auto precision = s.u8(pos + 2);
  const auto height = s.be(pos + 3, 2);
  const auto width = s.be(pos + 5, 2);
  const auto components = s.u8(pos + 7);
  if (!length || !precision || !height || !width || !components) {
    return fail(error, "frame header cut short");
  }
  if (*width == 0 || *height == 0 || *components == 0) {
    return fail(error, "empty image (0 width, height or components; DNL is not supported)");
  }
  if (*precision != 8) return fail(error, std::to_string(*precision) + "-bit samples");
  if (*components > 10) return fail(error, std::to_string(*components) + " components");
  if (*length != 8 + 3u * *components) return fail(error, "bad frame header length");
  for (int i = 0; i < *components; ++i) {
    const auto sampling = s.u8(pos + 9 + 3 * static_cast<std::uint64_t>(i));
    if (!sampling) return fail(error, "frame header cut short");
    frame.h[static_cast<std::size_t>(i)] = *sampling >> 4;
    frame.v[static_cast<std::size_t>(i)] = *sampling & 15;
    if (frame.h[i] < 1 || frame.h[i] > 4 || frame.v[i] < 1 || frame.v[i] > 4) {
      return fail(error, "bad sampling factors");
    }
  }
  frame.header.width = *width;
  frame.header.height = *height;
  frame.header.channels = *components;
  frame.header.bits_per_sample = 8;
  return frame.header;
}

// Bytes of libjpeg's DCT coefficient storage: the whole image (`full`) or one block row.
std::uint64_t coefficient_bytes(const JpegFrame& f, bool full) {
  const int n = f.header.channels;
  const int h_max = *std::max_element(f.h.begin(), f.h.begin() + n);
  const int v_max = *std::max_element(f.v.begin(), f.v.begin() + n);
  std::uint64_t total = 0;
  for (int i = 0; i < n; ++i) {
    const auto h = static_cast<std::uint64_t>(f.h[i]), v = static_cast<std::uint64_t>(f.v[i]);
    const std::uint64_t blocks_w = ceil_div(ceil_div(f.header.width * h, h_max), 8) + h;
    const std::uint64_t blocks_h =
        full ? ceil_div(ceil_div(f.header.height * v, v_max), 8) + v : 2 * v;
    total = add_sat(total, mul_sat(mul_sat(blocks_w, blocks_h), 128));  // 64 int16 per block
  }
  return total;
}

}  // namespace

Result parse_jpeg(HeaderSource& s, std::string* error) {
  std::uint64_t pos = 2;  // after SOI
  JpegFrame frame;
  bool saw_frame = false;
  for (int count = 0; count < kMaxJpegMarkers; ++count) {
    const auto marker = next_marker(s, pos);
    if (!marker) return fail(error, "no scan before the end of the data");
    const int m = *marker;
    const bool supported_frame = m == 0xC0 || m == 0xC1 || m == 0xC2 || m == 0xC9 || m == 0xCA;
    if (m == 0xDA) {  // the first scan: libjpeg's header reading ends here
      if (!saw_frame) return fail(error, "scan before the frame header");
      const auto scan_components = s.u8(pos + 2);
      if (!scan_components) return fail(error, "scan header cut short");
      // A progressive or non-interleaved (multi-scan) file makes libjpeg keep every DCT
      // coefficient of the whole image, whatever the output scale.
      const bool full = frame.progressive || *scan_components < frame.header.channels;
      frame.header.work_bytes = coefficient_bytes(frame, full);
      return frame.header;
    }
    if (m == 0xD8) return fail(error, "two start-of-image markers");
    if (m == 0xD9) return fail(error, "end of image before any scan");
    if ((m >= 0xD0 && m <= 0xD7) || m == 0x01) continue;  // RSTn, TEM: no length
    const bool skipped = (m >= 0xE0 && m <= 0xEF) || m == 0xFE || m == 0xC4 || m == 0xDB ||
                         m == 0xDD || m == 0xCC || m == 0xDC;
    if (!supported_frame && !skipped) {
      const bool other_frame = m >= 0xC3 && m <= 0xCF;
      return fail(error, std::string(other_frame ? "unsupported JPEG process" : "unknown marker") +
                             " (marker " + std::to_string(m) + ")");
    }
    if (supported_frame) {
      if (saw_frame) return fail(error, "two frame headers");
      if (!read_sof(s, pos, frame, error)) return std::nullopt;
      frame.progressive = m == 0xC2 || m == 0xCA;
      saw_frame = true;
    }
    const auto length = s.be(pos, 2);
    if (!length || *length < 2) return fail(error, "bad segment length");
    pos += *length;
  }
  return fail(error, "more than " + std::to_string(kMaxJpegMarkers) + " markers before a scan");
}

// ---- PNG --------------------------------------------------------------------------------------

Result parse_png(HeaderSource& s, std::string* error) {
  std::array<std::uint8_t, 4> type{};
  const auto length = s.be(8, 4);
  if (!length || !s.get(12, 4, type.data()) ||
      type != std::array<std::uint8_t, 4>{'I', 'H', 'D', 'R'}) {
    return fail(error, "no IHDR chunk first");
  }
  const auto width = s.be(16, 4), height = s.be(20, 4);
  const auto depth = s.u8(24), colour = s.u8(25);
  if (*length != 13 || !width || !height || !depth || !colour) return fail(error, "bad IHDR");
  // libpng refuses 0 and anything over 2^31 - 1 (and, by default, over 1,000,000 per side).
  if (*width == 0 || *height == 0 || *width > 0x7FFFFFFF || *height > 0x7FFFFFFF) {
    return fail(error, "bad dimensions");
  }
  static constexpr std::array<int, 7> kChannels = {1, 0, 3, 1, 2, 0, 4};  // by colour type
  if (*colour > 6 || kChannels[*colour] == 0) return fail(error, "bad colour type");
  ImageHeader header;
  header.width = *width;
  header.height = *height;
  header.channels = *colour == 3 ? 3 : kChannels[*colour];
  header.bits_per_sample = *depth;
  header.work_bytes = mul_sat(header.width, 16);  // libpng's row buffers
  return header;
}

// ---- WebP -------------------------------------------------------------------------------------

namespace {

// The image in a VP8 or VP8L bitstream at `pos`, or nullopt.
Result webp_bitstream(HeaderSource& s, std::uint64_t pos, bool lossless, std::string* error) {
  ImageHeader header;
  if (lossless) {
    const auto signature = s.u8(pos);
    const auto bits = s.le(pos + 1, 4);
    if (!signature || !bits || *signature != 0x2F || (*bits >> 29) != 0) {
      return fail(error, "bad VP8L header");
    }
    header.width = (*bits & 0x3FFF) + 1;
    header.height = ((*bits >> 14) & 0x3FFF) + 1;
    header.channels = 4;
  } else {
    const auto tag = s.le(pos, 3);
    const auto start = s.be(pos + 3, 3);
    const auto width = s.le(pos + 6, 2), height = s.le(pos + 8, 2);
    if (!tag || !start || !width || !height || (*tag & 1) != 0 || *start != 0x9D012A) {
      return fail(error, "bad VP8 key frame header");
    }
    header.width = *width & 0x3FFF;
    header.height = *height & 0x3FFF;
    header.channels = 3;
  }
  if (header.width == 0 || header.height == 0) return fail(error, "empty image");
  header.work_bytes = mul_sat(header.pixels(), 4);  // ARGB/YUV planes inside libwebp
  return header;
}

}  // namespace

Result parse_webp(HeaderSource& s, std::string* error) {
  std::array<std::uint8_t, 4> tag{};
  std::uint64_t chunk = 0;  // where a chunk header (fourcc + size) starts, if any
  if (s.get(0, 4, tag.data()) && tag == std::array<std::uint8_t, 4>{'R', 'I', 'F', 'F'}) {
    chunk = 12;
  }
  if (!s.get(chunk, 4, tag.data())) return fail(error, "cut short");
  const std::string fourcc(tag.begin(), tag.end());
  if (fourcc == "VP8X") {
    const auto flags = s.u8(chunk + 8);
    const auto width = s.le(chunk + 12, 3), height = s.le(chunk + 15, 3);
    if (!flags || !width || !height) return fail(error, "VP8X chunk cut short");
    if (*flags & 0x02) return fail(error, "animated WebP is not supported");
    ImageHeader header;
    header.width = *width + 1;
    header.height = *height + 1;
    header.channels = 4;
    header.work_bytes = mul_sat(header.pixels(), 4);
    return header;
  }
  if (fourcc == "VP8 " || fourcc == "VP8L")
    return webp_bitstream(s, chunk + 8, fourcc == "VP8L", error);
  if (chunk != 0) return fail(error, "unknown first chunk '" + fourcc + "'");
  const auto first = s.u8(0);
  return webp_bitstream(s, 0, first && *first == 0x2F, error);  // a bare bitstream
}

// ---- BMP, Sun raster, GIF ---------------------------------------------------------------------

Result parse_bmp(HeaderSource& s, std::string* error) {
  const auto info_size = s.le(14, 4);
  if (!info_size || *info_size == 0 || *info_size > 0x7FFFFFFF) return fail(error, "bad size");
  std::int64_t width = 0, height = 0;
  std::uint64_t bpp = 0;
  if (*info_size >= 36) {
    const auto w = s.le(18, 4), h = s.le(22, 4), b = s.le(28, 2);
    if (!w || !h || !b) return fail(error, "cut short");
    width = static_cast<std::int32_t>(*w);
    height = static_cast<std::int32_t>(*h);
    bpp = *b;
  } else if (*info_size == 12) {  // OS/2 BITMAPCOREHEADER
    const auto w = s.le(18, 2), h = s.le(20, 2), b = s.le(24, 2);
    if (!w || !h || !b) return fail(error, "cut short");
    width = static_cast<std::int64_t>(*w);
    height = static_cast<std::int64_t>(*h);
    bpp = *b;
  } else {
    return fail(error, "unsupported info header size " + std::to_string(*info_size));
  }
  if (width <= 0 || height == 0 || height == INT32_MIN) return fail(error, "bad dimensions");
  ImageHeader header;
  header.width = static_cast<std::uint64_t>(width);
  header.height = static_cast<std::uint64_t>(height < 0 ? -height : height);
  header.channels = bpp == 32 ? 4 : 3;
  header.bits_per_sample = 8;
  header.work_bytes = mul_sat(header.width, 8);
  return header;
}

Result parse_sun_raster(HeaderSource& s, std::string* error) {
  const auto width = s.be(4, 4), height = s.be(8, 4), depth = s.be(12, 4);
  if (!width || !height || !depth) return fail(error, "cut short");
  const auto w = static_cast<std::int32_t>(*width), h = static_cast<std::int32_t>(*height);
  if (w <= 0 || h <= 0) return fail(error, "bad dimensions");
  ImageHeader header;
  header.width = static_cast<std::uint64_t>(w);
  header.height = static_cast<std::uint64_t>(h);
  header.channels = *depth >= 24 ? 3 : 1;
  header.work_bytes = mul_sat(header.width, 8);
  return header;
}

Result parse_gif(HeaderSource& s, std::string* error) {
  const auto width = s.le(6, 2), height = s.le(8, 2);
  if (!width || !height) return fail(error, "cut short");
  ImageHeader header;
  header.width = *width;
  header.height = *height;
  header.channels = 3;
  return header;
}

}  // namespace ltfit::header_internal
