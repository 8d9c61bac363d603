// Internals of the image header reader (image_header.h), private to src/data: a bounded,
// buffered view of the file's bytes and one parser per format. Each parser reads the header the
// way the OpenCV decoder for that format does (same fields, same byte order, same defaults), so
// the size it returns is the size that decoder will allocate for. Not thread-safe per object
// (each read uses its own HeaderSource).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ltfit/data/image_header.h"

namespace ltfit::header_internal {

// Random access to the file through a small cache, reading at most kMaxHeaderReadBytes in all,
// so a crafted file cannot make the header check read (or allocate) much.
class HeaderSource {
 public:
  static constexpr std::uint64_t kMaxHeaderReadBytes = 4ULL << 20;

  HeaderSource(const ByteReader& read, std::uint64_t size) : read_(read), size_(size) {}
  std::uint64_t size() const { return size_; }
  // Copies `n` bytes at `offset` to `out`; false past the end or over the read budget.
  bool get(std::uint64_t offset, std::size_t n, std::uint8_t* out);
  std::optional<std::uint8_t> u8(std::uint64_t offset);
  std::optional<std::uint64_t> be(std::uint64_t offset, int bytes);  // big-endian unsigned
  std::optional<std::uint64_t> le(std::uint64_t offset, int bytes);  // little-endian unsigned
  // True once a read asked for bytes past the end of the data (the file is cut short).
  bool ran_out() const { return ran_out_; }

 private:
  static constexpr std::size_t kWindow = 4096;
  const ByteReader& read_;
  std::uint64_t size_;
  std::uint64_t window_offset_ = 0;
  std::vector<std::uint8_t> window_;
  std::uint64_t bytes_read_ = 0;
  bool ran_out_ = false;
};

// Saturating products, so a header claiming 2^32 x 2^32 cannot wrap to a small number.
std::uint64_t mul_sat(std::uint64_t a, std::uint64_t b);
std::uint64_t add_sat(std::uint64_t a, std::uint64_t b);

// C-locale isspace, as OpenCV's header readers use it.
bool is_space(int c);

using Result = std::optional<ImageHeader>;

// A refused header: `what` into *error, and no result.
inline Result fail(std::string* error, const std::string& what) {
  *error = what;
  return std::nullopt;
}

// Each parser sets *error ("invalid PNG header: ...") when it returns nullopt.
Result parse_jpeg(HeaderSource& s, std::string* error);
Result parse_png(HeaderSource& s, std::string* error);
Result parse_webp(HeaderSource& s, std::string* error);
Result parse_bmp(HeaderSource& s, std::string* error);
Result parse_gif(HeaderSource& s, std::string* error);
Result parse_tiff(HeaderSource& s, std::string* error);
Result parse_pnm(HeaderSource& s, std::string* error);  // P1-P6
Result parse_pam(HeaderSource& s, std::string* error);  // P7
Result parse_pfm(HeaderSource& s, std::string* error);
Result parse_sun_raster(HeaderSource& s, std::string* error);
Result parse_hdr(HeaderSource& s, std::string* error);
Result parse_exr(HeaderSource& s, std::string* error);
Result parse_jp2(HeaderSource& s, std::string* error);
Result parse_j2k(HeaderSource& s, std::string* error);

}  // namespace ltfit::header_internal
