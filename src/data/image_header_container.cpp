// Header parsers for the formats whose size sits in a directory, attribute list or box
// structure: TIFF, OpenEXR and JPEG 2000 (image_header_parsers.h). Each follows its decoder:
// libtiff's first directory and OpenCV's TiffDecoder tile buffer, the OpenEXR header
// attributes, OpenJPEG's SIZ marker segment.
#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <string>

#include "data/image_header_parsers.h"

namespace ltfit::header_internal {
namespace {

// ---- TIFF -------------------------------------------------------------------------------------

struct TiffReader {
  HeaderSource& s;
  bool big_endian;
  bool big_tiff;
  std::optional<std::uint64_t> uint(std::uint64_t pos, int bytes) {
    return big_endian ? s.be(pos, bytes) : s.le(pos, bytes);
  }
};

// The first value of the directory entry at `entry`, as libtiff converts it to an integer.
std::optional<std::uint64_t> tiff_value(TiffReader& r, std::uint64_t entry) {
  const auto type = r.uint(entry + 2, 2);
  const auto count = r.uint(entry + 4, r.big_tiff ? 8 : 4);
  if (!type || !count || *count == 0) return std::nullopt;
  int size = 0;
  bool is_signed = false;
  switch (*type) {
    case 1:
      size = 1;
      break;  // BYTE
    case 6:
      size = 1;
      is_signed = true;
      break;  // SBYTE
    case 3:
      size = 2;
      break;  // SHORT
    case 8:
      size = 2;
      is_signed = true;
      break;  // SSHORT
    case 4:
      size = 4;
      break;  // LONG
    case 9:
      size = 4;
      is_signed = true;
      break;  // SLONG
    case 16:
      size = 8;
      break;  // LONG8
    case 17:
      size = 8;
      is_signed = true;
      break;  // SLONG8
    default:
      return std::nullopt;
  }
  const std::uint64_t inline_bytes = r.big_tiff ? 8 : 4;
  const std::uint64_t field = entry + (r.big_tiff ? 12 : 8);
  std::uint64_t at = field;
  if (mul_sat(*count, static_cast<std::uint64_t>(size)) > inline_bytes) {
    const auto offset = r.uint(field, r.big_tiff ? 8 : 4);
    if (!offset) return std::nullopt;
    at = *offset;
  }
  const auto value = r.uint(at, size);
  if (!value) return std::nullopt;
  if (is_signed && (*value >> (size * 8 - 1)) != 0) return std::nullopt;  // negative
  return value;
}

constexpr std::uint64_t kTiffMaxEntries = 4096;  // libtiff's own directory sanity limit

}  // namespace

Result parse_tiff(HeaderSource& s, std::string* error) {
  const auto order = s.u8(0), version = s.u8(2);
  TiffReader r{s, order && *order == 'M', false};
  const auto magic = r.uint(2, 2);
  if (!version || !magic) return fail(error, "cut short");
  r.big_tiff = *magic == 43;
  const auto ifd = r.big_tiff ? r.uint(8, 8) : r.uint(4, 4);
  const auto entries = ifd ? r.uint(*ifd, r.big_tiff ? 8 : 2) : std::nullopt;
  if (!entries) return fail(error, "no first directory");
  if (*entries > kTiffMaxEntries) return fail(error, "directory of " + std::to_string(*entries));
  const std::uint64_t entry_size = r.big_tiff ? 20 : 12;
  const std::uint64_t first = *ifd + (r.big_tiff ? 8 : 2);
  // Tags: 256 width, 257 length, 258 bits/sample, 277 samples/pixel, 278 rows/strip,
  // 322 tile width, 323 tile length. A duplicate of any is refused rather than guessed at.
  std::array<std::optional<std::uint64_t>, 7> values{};
  constexpr std::array<std::uint64_t, 7> kTags = {256, 257, 258, 277, 278, 322, 323};
  for (std::uint64_t i = 0; i < *entries; ++i) {
    const std::uint64_t entry = first + i * entry_size;
    const auto tag = r.uint(entry, 2);
    if (!tag) return fail(error, "directory cut short");
    const auto it = std::find(kTags.begin(), kTags.end(), *tag);
    if (it == kTags.end()) continue;
    auto& slot = values[static_cast<std::size_t>(it - kTags.begin())];
    if (slot) return fail(error, "tag " + std::to_string(*tag) + " given twice");
    slot = tiff_value(r, entry);
    if (!slot) return fail(error, "unreadable value of tag " + std::to_string(*tag));
  }
  const auto& [width, length, bits, samples, rows, tile_w, tile_h] = values;
  if (!width || !length || *width == 0 || *length == 0) return fail(error, "no image size");
  if (tile_w.has_value() != tile_h.has_value()) return fail(error, "half a tile size");
  ImageHeader header;
  header.width = *width;
  header.height = *length;
  header.channels = static_cast<int>(std::min<std::uint64_t>(samples.value_or(1), 1 << 16));
  header.bits_per_sample = static_cast<int>(std::min<std::uint64_t>(bits.value_or(1), 1 << 16));
  // OpenCV's TiffDecoder buffers one tile, or one strip of `rows` full-width rows, whole (as
  // RGBA for 8-bit output); RowsPerStrip 0 or 2^32-1 means the whole image.
  const std::uint64_t strip = rows.value_or(0xFFFFFFFF);
  header.tile_width = tile_w ? *tile_w : header.width;
  header.tile_height =
      tile_h ? *tile_h : (strip == 0 || strip == 0xFFFFFFFF ? header.height : strip);
  if (header.tile_width == 0) header.tile_width = header.width;
  if (header.tile_height == 0) header.tile_height = header.height;
  const std::uint64_t sample_bytes = std::max<std::uint64_t>(1, (header.bits_per_sample + 7) / 8);
  header.work_bytes =
      mul_sat(header.tile_pixels(), add_sat(4, mul_sat(header.channels, sample_bytes)));
  return header;
}

// ---- OpenEXR ----------------------------------------------------------------------------------

namespace {

// A NUL-terminated attribute or type name at `pos` (advanced past the NUL).
std::optional<std::string> exr_string(HeaderSource& s, std::uint64_t& pos, std::size_t max) {
  std::string text;
  for (;;) {
    const auto c = s.u8(pos++);
    if (!c) return std::nullopt;
    if (*c == 0) return text;
    if (text.size() >= max) return std::nullopt;
    text.push_back(static_cast<char>(*c));
  }
}

}  // namespace

Result parse_exr(HeaderSource& s, std::string* error) {
  const auto version = s.le(4, 4);
  if (!version || (*version & 0xFF) != 2) return fail(error, "unsupported version");
  if (*version & 0x1800) return fail(error, "multi-part and deep files are not supported");
  const std::size_t max_name = (*version & 0x400) ? 255 : 31;
  std::uint64_t pos = 8;
  std::optional<std::array<std::int64_t, 4>> window;
  std::uint64_t channels = 0;
  for (int attributes = 0; attributes < 1024; ++attributes) {
    const auto name = exr_string(s, pos, max_name);
    if (!name) return fail(error, "bad attribute name");
    if (name->empty()) break;  // end of the header
    const auto type = exr_string(s, pos, max_name);
    const auto size = s.le(pos, 4);
    if (!type || !size || *size > 0x7FFFFFFF) return fail(error, "bad attribute");
    pos += 4;
    if (*name == "dataWindow" && *type == "box2i" && *size == 16) {
      std::array<std::int64_t, 4> box{};
      for (std::size_t k = 0; k < 4; ++k) {
        const auto v = s.le(pos + 4 * k, 4);
        if (!v) return fail(error, "cut short");
        box[k] = static_cast<std::int32_t>(*v);
      }
      window = box;
    } else if (*name == "channels") {
      channels = *size / 18 + 1;  // each entry: a name (>= 2 bytes with its NUL) and 16 bytes
    }
    pos += *size;
  }
  if (!window) return fail(error, "no dataWindow");
  const std::int64_t width = (*window)[2] - (*window)[0] + 1;
  const std::int64_t height = (*window)[3] - (*window)[1] + 1;
  if (width <= 0 || height <= 0 || width > INT_MAX || height > INT_MAX) {
    return fail(error, "bad dataWindow");
  }
  ImageHeader header;
  header.width = static_cast<std::uint64_t>(width);
  header.height = static_cast<std::uint64_t>(height);
  header.channels = static_cast<int>(std::clamp<std::uint64_t>(channels, 1, 64));
  header.bits_per_sample = 32;
  header.work_bytes = mul_sat(header.pixels(), 4 * std::max<std::uint64_t>(channels, 4));
  return header;
}

// ---- JPEG 2000 --------------------------------------------------------------------------------

namespace {

constexpr std::uint64_t kMaxJ2kComponents = 4;  // what OpenCV's decoder turns into an image

// The SIZ marker segment at `pos` (just after SOC), as OpenJPEG reads it.
Result j2k_siz(HeaderSource& s, std::uint64_t pos, std::string* error) {
  const auto marker = s.be(pos, 2);
  const auto x1 = s.be(pos + 6, 4), y1 = s.be(pos + 10, 4);
  const auto x0 = s.be(pos + 14, 4), y0 = s.be(pos + 18, 4);
  const auto tile_w = s.be(pos + 22, 4), tile_h = s.be(pos + 26, 4);
  const auto components = s.be(pos + 38, 2);
  if (!marker || *marker != 0xFF51 || !x1 || !y1 || !x0 || !y0 || !tile_w || !tile_h ||
      !components) {
    return fail(error, "no SIZ marker segment");
  }
  if (*x1 <= *x0 || *y1 <= *y0 || *tile_w == 0 || *tile_h == 0) return fail(error, "bad size");
  if (*components == 0 || *components > kMaxJ2kComponents) {
    return fail(error, std::to_string(*components) + " components");
  }
  ImageHeader header;
  header.width = *x1 - *x0;
  header.height = *y1 - *y0;
  header.channels = static_cast<int>(*components);
  const std::uint64_t tiles =
      mul_sat((header.width + *tile_w - 1) / *tile_w, (header.height + *tile_h - 1) / *tile_h);
  // OpenJPEG holds each component as int32 planes (image and tile) plus per-tile state.
  header.work_bytes = add_sat(mul_sat(header.pixels(), 8 * *components), mul_sat(tiles, 16384));
  return header;
}

}  // namespace

Result parse_j2k(HeaderSource& s, std::string* error) { return j2k_siz(s, 2, error); }

Result parse_jp2(HeaderSource& s, std::string* error) {
  std::uint64_t pos = 0;
  for (int boxes = 0; boxes < 256 && pos < s.size(); ++boxes) {
    const auto length = s.be(pos, 4);
    std::array<std::uint8_t, 4> type{};
    if (!length || !s.get(pos + 4, 4, type.data())) return fail(error, "box cut short");
    std::uint64_t header_size = 8, box_size = *length;
    if (*length == 1) {
      const auto extended = s.be(pos + 8, 8);
      if (!extended) return fail(error, "box cut short");
      header_size = 16;
      box_size = *extended;
    } else if (*length == 0) {
      box_size = s.size() - pos;
    }
    if (box_size < header_size) return fail(error, "bad box length");
    if (type == std::array<std::uint8_t, 4>{'j', 'p', '2', 'c'}) {
      const auto soc = s.be(pos + header_size, 2);
      if (!soc || *soc != 0xFF4F) return fail(error, "codestream without SOC");
      return j2k_siz(s, pos + header_size + 2, error);
    }
    pos = add_sat(pos, box_size);
  }
  return fail(error, "no codestream box");
}

}  // namespace ltfit::header_internal
