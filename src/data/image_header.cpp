// Identifying an image file by its bytes and checking it against the decode limits; see
// image_header.h. The per-format parsers are in image_header_raster.cpp (JPEG, PNG, WebP, BMP,
// Sun raster, GIF), image_header_text.cpp (PNM, PAM, PFM, HDR) and image_header_container.cpp
// (TIFF, OpenEXR, JPEG 2000).
#include "ltfit/data/image_header.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>

#include "data/image_header_parsers.h"

namespace ltfit {

namespace header_internal {

bool HeaderSource::get(std::uint64_t offset, std::size_t n, std::uint8_t* out) {
  if (offset > size_ || n > size_ - offset) {
    ran_out_ = true;
    return false;
  }
  const bool cached = offset >= window_offset_ && offset - window_offset_ <= window_.size() &&
                      n <= window_.size() - (offset - window_offset_);
  if (!cached) {
    const std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(std::max(n, kWindow), size_ - offset));
    if (bytes_read_ + want > kMaxHeaderReadBytes) return false;
    window_.resize(want);
    const std::size_t got = read_(offset, want, window_.data());
    bytes_read_ += want;
    window_.resize(got);
    window_offset_ = offset;
    if (got < n) return false;
  }
  if (n > 0) std::memcpy(out, window_.data() + (offset - window_offset_), n);
  return true;
}

std::optional<std::uint8_t> HeaderSource::u8(std::uint64_t offset) {
  std::uint8_t byte = 0;
  if (!get(offset, 1, &byte)) return std::nullopt;
  return byte;
}

std::optional<std::uint64_t> HeaderSource::be(std::uint64_t offset, int bytes) {
  std::array<std::uint8_t, 8> b{};
  if (!get(offset, static_cast<std::size_t>(bytes), b.data())) return std::nullopt;
  std::uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value = value << 8 | b[static_cast<std::size_t>(i)];
  return value;
}

std::optional<std::uint64_t> HeaderSource::le(std::uint64_t offset, int bytes) {
  std::array<std::uint8_t, 8> b{};
  if (!get(offset, static_cast<std::size_t>(bytes), b.data())) return std::nullopt;
  std::uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; --i) value = value << 8 | b[static_cast<std::size_t>(i)];
  return value;
}

std::uint64_t mul_sat(std::uint64_t a, std::uint64_t b) {
  std::uint64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? UINT64_MAX : product;
}

std::uint64_t add_sat(std::uint64_t a, std::uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

bool is_space(int c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

}  // namespace header_internal

namespace {

using namespace header_internal;

// Enough bytes for every signature OpenCV checks (DICOM's "DICM" at 128, DTED at 140).
constexpr std::size_t kSignatureBytes = 148;

struct Signature {
  ImageFormat format;
  bool (*matches)(const std::vector<std::uint8_t>& b);
  Result (*parse)(HeaderSource& s, std::string* error);
};

bool starts_with(const std::vector<std::uint8_t>& b, std::initializer_list<int> prefix,
                 std::size_t at = 0) {
  if (b.size() < at + prefix.size()) return false;
  std::size_t i = at;
  for (const int c : prefix) {
    if (b[i++] != static_cast<std::uint8_t>(c)) return false;
  }
  return true;
}

bool starts_with(const std::vector<std::uint8_t>& b, const char* text, std::size_t at = 0) {
  const std::size_t n = std::strlen(text);
  return b.size() >= at + n && std::memcmp(b.data() + at, text, n) == 0;
}

// libwebp's WebPGetFeatures accepts a RIFF container, a bare VP8X/VP8/VP8L chunk or a bare
// VP8/VP8L bitstream; this is deliberately at least as lenient (ambiguity is checked anyway).
bool looks_like_webp(const std::vector<std::uint8_t>& b) {
  return (starts_with(b, "RIFF") && starts_with(b, "WEBP", 8)) || starts_with(b, "VP8X") ||
         starts_with(b, "VP8 ") || starts_with(b, "VP8L") ||
         (b.size() >= 5 && b[0] == 0x2F && (b[4] >> 5) == 0) ||
         starts_with(b, {0x9D, 0x01, 0x2A}, 3);
}

bool pnm_like(const std::vector<std::uint8_t>& b, bool (*second)(std::uint8_t)) {
  return b.size() >= 3 && b[0] == 'P' && second(b[1]) && is_space(b[2]);
}

// OpenCV's decoders in the order imdecode tries them (loadsave.cpp), then GIF, which no
// decoder here reads but which a user may well have.
const std::array<Signature, 17> kSignatures = {{
    {ImageFormat::kBmp, [](const auto& b) { return starts_with(b, "BM"); }, parse_bmp},
    {ImageFormat::kHdr,
     [](const auto& b) { return starts_with(b, "#?RGBE") || starts_with(b, "#?RADIANCE"); },
     parse_hdr},
    {ImageFormat::kJpeg,
     [](const auto& b) {
       return starts_with(b, {0xFF, 0xD8, 0xFF});
     },
     parse_jpeg},
    {ImageFormat::kWebp, looks_like_webp, parse_webp},
    {ImageFormat::kSunRaster,
     [](const auto& b) {
       return starts_with(b, {0x59, 0xA6, 0x6A, 0x95});
     },
     parse_sun_raster},
    {ImageFormat::kPnm,
     [](const auto& b) { return pnm_like(b, [](std::uint8_t c) { return c >= '1' && c <= '6'; }); },
     parse_pnm},
    {ImageFormat::kPnm,
     [](const auto& b) { return pnm_like(b, [](std::uint8_t c) { return c == '7'; }); }, parse_pam},
    {ImageFormat::kPfm,
     [](const auto& b) { return pnm_like(b, [](std::uint8_t c) { return c == 'f' || c == 'F'; }); },
     parse_pfm},
    {ImageFormat::kTiff,
     [](const auto& b) {
       return starts_with(b, {'I', 'I', 0x2A, 0}) || starts_with(b, {'M', 'M', 0, 0x2A}) ||
              starts_with(b, {'I', 'I', 0x2B, 0}) || starts_with(b, {'M', 'M', 0, 0x2B});
     },
     parse_tiff},
    {ImageFormat::kPng,
     [](const auto& b) {
       return starts_with(b, {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A});
     },
     parse_png},
    {ImageFormat::kDicom, [](const auto& b) { return starts_with(b, "DICM", 128); }, nullptr},
    {ImageFormat::kJpeg2000,
     [](const auto& b) {
       return starts_with(b, {0, 0, 0, 0x0C, 'j', 'P', ' ', ' ', 0x0D, 0x0A, 0x87, 0x0A});
     },
     parse_jp2},
    {ImageFormat::kJpeg2000,
     [](const auto& b) {
       return starts_with(b, {0xFF, 0x4F, 0xFF, 0x51});
     },
     parse_j2k},
    {ImageFormat::kExr,
     [](const auto& b) {
       return starts_with(b, {0x76, 0x2F, 0x31, 0x01});
     },
     parse_exr},
    {ImageFormat::kGdal, [](const auto& b) { return starts_with(b, "NITF"); }, nullptr},
    {ImageFormat::kGdal,
     [](const auto& b) { return b.size() > 144 && starts_with(b, "DTED", 140); }, nullptr},
    {ImageFormat::kGif,
     [](const auto& b) { return starts_with(b, "GIF87a") || starts_with(b, "GIF89a"); }, parse_gif},
}};

std::string hex_prefix(const std::vector<std::uint8_t>& b) {
  std::string text;
  for (std::size_t i = 0; i < b.size() && i < 8; ++i) {
    char hex[4];
    std::snprintf(hex, sizeof hex, "%s%02x", i ? " " : "", b[i]);
    text += hex;
  }
  return text.empty() ? "none" : text;
}

constexpr std::array<std::pair<ImageFormat, const char*>, 14> kNames = {{
    {ImageFormat::kJpeg, "jpeg"},
    {ImageFormat::kPng, "png"},
    {ImageFormat::kWebp, "webp"},
    {ImageFormat::kBmp, "bmp"},
    {ImageFormat::kTiff, "tiff"},
    {ImageFormat::kPnm, "pnm"},
    {ImageFormat::kPfm, "pfm"},
    {ImageFormat::kSunRaster, "sunras"},
    {ImageFormat::kHdr, "hdr"},
    {ImageFormat::kExr, "exr"},
    {ImageFormat::kJpeg2000, "jpeg2000"},
    {ImageFormat::kGif, "gif"},
    {ImageFormat::kDicom, "dicom"},
    {ImageFormat::kGdal, "gdal (NITF/DTED)"},
}};

}  // namespace

std::string image_format_name(ImageFormat format) {
  for (const auto& [f, name] : kNames) {
    if (f == format) return name;
  }
  return "unknown";
}

std::optional<ImageFormat> image_format_from_name(const std::string& name) {
  if (std::find(kImageFormatNames.begin(), kImageFormatNames.end(), name) ==
      kImageFormatNames.end()) {
    return std::nullopt;
  }
  for (const auto& [f, n] : kNames) {
    if (name == n) return f;
  }
  return std::nullopt;
}

std::uint64_t ImageHeader::pixels() const { return mul_sat(width, height); }
std::uint64_t ImageHeader::tile_pixels() const { return mul_sat(tile_width, tile_height); }

std::optional<ImageHeader> read_image_header(const ByteReader& read, std::uint64_t total_size,
                                             std::string* error) {
  HeaderSource source(read, total_size);
  std::vector<std::uint8_t> head(
      static_cast<std::size_t>(std::min<std::uint64_t>(kSignatureBytes, total_size)));
  if (!source.get(0, head.size(), head.data())) {
    *error = "cannot read the file's first bytes";
    return std::nullopt;
  }
  const Signature* found = nullptr;
  for (const Signature& signature : kSignatures) {
    if (!signature.matches(head)) continue;
    if (found != nullptr) {
      *error = "ambiguous image format: its bytes match both the " +
               image_format_name(found->format) + " and the " +
               image_format_name(signature.format) + " decoder's signature";
      return std::nullopt;
    }
    found = &signature;
  }
  if (found == nullptr) {
    *error = "not a decodable image (unrecognised format; first bytes " + hex_prefix(head) + ")";
    return std::nullopt;
  }
  if (found->parse == nullptr) return ImageHeader{found->format};
  std::string reason;
  Result header = found->parse(source, &reason);
  if (!header) {
    *error = source.ran_out() ? "truncated " + image_format_name(found->format) +
                                    " file (the header is cut short: " + reason + ")"
                              : "not a decodable image (invalid " +
                                    image_format_name(found->format) + " header: " + reason + ")";
    return std::nullopt;
  }
  header->format = found->format;
  return header;
}

std::optional<ImageHeader> read_image_header(std::span<const std::uint8_t> bytes,
                                             std::string* error) {
  const ByteReader read = [bytes](std::uint64_t offset, std::size_t size, std::uint8_t* out) {
    if (offset >= bytes.size()) return std::size_t{0};
    const std::size_t n = std::min<std::size_t>(size, bytes.size() - offset);
    std::memcpy(out, bytes.data() + offset, n);
    return n;
  };
  return read_image_header(read, bytes.size(), error);
}

ImageLimits image_limits(const DataConfig& data) {
  ImageLimits limits;
  limits.max_pixels = data.max_pixels;
  limits.formats.clear();
  for (const auto& name : data.formats) {
    if (const auto format = image_format_from_name(name)) limits.formats.push_back(*format);
  }
  return limits;
}

std::string check_image_limits(const ImageHeader& header, const ImageLimits& limits) {
  const std::string name = image_format_name(header.format);
  if (std::find(limits.formats.begin(), limits.formats.end(), header.format) ==
      limits.formats.end()) {
    std::vector<std::string> allowed;
    for (const ImageFormat f : limits.formats) allowed.push_back(image_format_name(f));
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    const bool known = image_format_from_name(name).has_value();
    return "format " + name + " not in data.formats (" + list + ")" +
           (known ? "; add it to data.formats to decode it" : "; ltfit never decodes it");
  }
  if (limits.max_pixels == 0) return "";
  const auto over = [&](const char* what, std::uint64_t w, std::uint64_t h) {
    return std::string(what) + " is " + std::to_string(w) + "×" + std::to_string(h) + " = " +
           std::to_string(mul_sat(w, h)) + " pixels, over data.max_pixels (" +
           std::to_string(limits.max_pixels) + "); raise data.max_pixels to allow it";
  };
  if (header.pixels() > limits.max_pixels) return over("image", header.width, header.height);
  if (header.tile_pixels() > limits.max_pixels) {
    return over("its TIFF tile", header.tile_width, header.tile_height);
  }
  return "";
}

}  // namespace ltfit
