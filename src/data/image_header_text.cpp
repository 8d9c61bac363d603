// Header parsers for the formats with a text header: the PNM family (PNM, PAM, PFM) and
// Radiance HDR (image_header_parsers.h). Each reads the header byte by byte the way OpenCV's
// PxM/PAM/PFM readers and RGBE_ReadHeader do, within the first 64 KiB.
#include <climits>
#include <cstdint>
#include <string>

#include "data/image_header_parsers.h"

namespace ltfit::header_internal {
namespace {

// Text headers (PNM, PAM, PFM, HDR) must end within this many bytes.
constexpr std::uint64_t kMaxTextHeader = 1 << 16;

// Reads a text header one byte at a time, like OpenCV's RLByteStream::getByte.
class TextCursor {
 public:
  TextCursor(HeaderSource& s, std::uint64_t pos) : s_(s), pos_(pos) {}
  std::optional<int> get() {
    if (pos_ >= kMaxTextHeader) return std::nullopt;
    const auto c = s_.u8(pos_++);
    return c ? std::optional<int>(*c) : std::nullopt;
  }

 private:
  HeaderSource& s_;
  std::uint64_t pos_;
};

bool is_digit(int c) { return c >= '0' && c <= '9'; }

}  // namespace

// ---- PNM (P1-P6), PAM (P7), PFM ---------------------------------------------------------------

namespace {

// OpenCV's PxM ReadNumber: skips blanks and '#' comments, reads digits up to INT_MAX.
std::optional<std::uint64_t> pnm_number(TextCursor& in) {
  auto c = in.get();
  while (c && !is_digit(*c)) {
    if (*c == '#') {
      do c = in.get();
      while (c && *c != '\n' && *c != '\r');
      if (c) c = in.get();
    } else if (is_space(*c)) {
      while (c && is_space(*c)) c = in.get();
    } else {
      return std::nullopt;
    }
  }
  if (!c) return std::nullopt;
  std::uint64_t value = 0;
  do {
    value = value * 10 + static_cast<std::uint64_t>(*c - '0');
    if (value > INT_MAX) return std::nullopt;
    c = in.get();
  } while (c && is_digit(*c));
  return value;  // a number ending the data is fine for the header, not for the decoder
}

}  // namespace

Result parse_pnm(HeaderSource& s, std::string* error) {
  const auto kind = s.u8(1);
  TextCursor in(s, 2);
  const auto width = pnm_number(in), height = pnm_number(in);
  const bool bitmap = *kind == '1' || *kind == '4';
  const auto maxval = bitmap ? std::optional<std::uint64_t>(1) : pnm_number(in);
  if (!width || !height || !maxval) return fail(error, "bad numbers");
  if (*width == 0 || *height == 0 || *maxval == 0 || *maxval > 65535) {
    return fail(error, "bad dimensions or maximum value");
  }
  ImageHeader header;
  header.width = *width;
  header.height = *height;
  header.channels = *kind == '3' || *kind == '6' ? 3 : 1;
  header.bits_per_sample = bitmap ? 1 : *maxval > 255 ? 16 : 8;
  header.work_bytes = mul_sat(header.width, 16);
  return header;
}

namespace {

// One PAM header line as OpenCV's ReadPAMHeaderLine splits it: identifier and value.
bool pam_line(TextCursor& in, std::string* ident, std::string* value) {
  auto c = in.get();
  while (c && is_space(*c)) c = in.get();
  if (!c) return false;
  ident->clear();
  value->clear();
  if (*c == '#') {
    do c = in.get();
    while (c && *c != '\n' && *c != '\r');
    return c.has_value();
  }
  for (; ident->size() < 8 && c && !is_space(*c); c = in.get())
    ident->push_back(static_cast<char>(*c));
  if (!c || !is_space(*c)) return false;
  if (*c == '\n' || *c == '\r') return true;
  do c = in.get();
  while (c && is_space(*c));
  for (; value->size() < 255 && c && *c != '\n' && *c != '\r'; c = in.get()) {
    value->push_back(static_cast<char>(*c));
  }
  if (!c || (*c != '\n' && *c != '\r')) return false;
  while (!value->empty() && is_space(value->back())) value->pop_back();
  return true;
}

std::optional<std::uint64_t> pam_int(const std::string& text) {
  if (text.empty() || text.size() > 10) return std::nullopt;
  std::uint64_t value = 0;
  for (const char c : text) {
    if (!is_digit(c)) return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return value < INT_MAX ? std::optional<std::uint64_t>(value) : std::nullopt;
}

}  // namespace

Result parse_pam(HeaderSource& s, std::string* error) {
  const auto end_of_line = s.u8(2);
  if (!end_of_line || (*end_of_line != '\n' && *end_of_line != '\r')) {
    return fail(error, "no line break after P7");
  }
  TextCursor in(s, 3);
  std::optional<std::uint64_t> width, height, depth, maxval;
  std::string ident, value;
  for (;;) {
    if (!pam_line(in, &ident, &value)) return fail(error, "bad header line");
    if (ident.empty() || ident == "TUPLTYPE") continue;
    if (ident == "ENDHDR") break;
    std::optional<std::uint64_t>* field = ident == "WIDTH"    ? &width
                                          : ident == "HEIGHT" ? &height
                                          : ident == "DEPTH"  ? &depth
                                          : ident == "MAXVAL" ? &maxval
                                                              : nullptr;
    if (field == nullptr || field->has_value()) return fail(error, "bad field " + ident);
    *field = pam_int(value);
    if (!*field) return fail(error, "bad " + ident + " value");
  }
  if (!width || !height || !depth || !maxval || *width == 0 || *height == 0 || *depth == 0 ||
      *depth > 4 || *maxval == 0 || *maxval > 65535) {
    return fail(error, "missing or bad WIDTH, HEIGHT, DEPTH or MAXVAL");
  }
  ImageHeader header;
  header.width = *width;
  header.height = *height;
  header.channels = static_cast<int>(*depth);
  header.bits_per_sample = *maxval > 255 ? 16 : 8;
  header.work_bytes = mul_sat(header.width, 32);
  return header;
}

namespace {

// OpenCV's PFM read_number<int>: the bytes up to a blank (at most 2048), through atoi.
std::optional<std::int64_t> pfm_number(TextCursor& in) {
  std::string token;
  for (int i = 0; i < 2048; ++i) {
    const auto c = in.get();
    if (!c || *c >= 128) return std::nullopt;
    if (is_space(*c)) break;
    token.push_back(static_cast<char>(*c));
  }
  std::size_t i = 0;
  const bool negative = !token.empty() && token[0] == '-';
  if (!token.empty() && (token[0] == '-' || token[0] == '+')) ++i;
  std::int64_t value = 0;
  for (; i < token.size() && is_digit(token[i]); ++i) {
    value = value * 10 + (token[i] - '0');
    if (value > INT_MAX) return std::nullopt;  // atoi's overflow is undefined: refuse
  }
  return negative ? -value : value;
}

}  // namespace

Result parse_pfm(HeaderSource& s, std::string* error) {
  const auto kind = s.u8(1), end_of_line = s.u8(2);
  if (!kind || !end_of_line || *end_of_line != '\n') return fail(error, "no line break after PF");
  TextCursor in(s, 3);
  const auto width = pfm_number(in), height = pfm_number(in);
  if (!width || !height || *width <= 0 || *height <= 0) return fail(error, "bad dimensions");
  ImageHeader header;
  header.width = static_cast<std::uint64_t>(*width);
  header.height = static_cast<std::uint64_t>(*height);
  header.channels = *kind == 'F' ? 3 : 1;
  header.bits_per_sample = 32;
  header.work_bytes = mul_sat(header.pixels(), 8 * static_cast<std::uint64_t>(header.channels));
  return header;
}

// ---- Radiance HDR -----------------------------------------------------------------------------

namespace {

// fgets(buffer, 128, file) as RGBE_ReadHeader calls it: up to 127 bytes or through '\n'.
std::optional<std::string> hdr_line(TextCursor& in) {
  std::string line;
  while (line.size() < 127) {
    const auto c = in.get();
    if (!c) break;
    line.push_back(static_cast<char>(*c));
    if (*c == '\n') break;
  }
  if (line.empty()) return std::nullopt;
  return line;
}

// sscanf's %d after optional blanks: sign and digits; nullopt when absent or out of int range.
std::optional<std::int64_t> scan_int(const std::string& text, std::size_t& i) {
  while (i < text.size() && is_space(text[i])) ++i;
  const bool negative = i < text.size() && text[i] == '-';
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  if (i >= text.size() || !is_digit(text[i])) return std::nullopt;
  std::int64_t value = 0;
  for (; i < text.size() && is_digit(text[i]); ++i) {
    value = value * 10 + (text[i] - '0');
    if (value > INT_MAX) return std::nullopt;
  }
  return negative ? -value : value;
}

// "-Y %d +X %d" as sscanf matches it (a blank in the format matches any run of blanks).
bool scan_literal(const std::string& text, std::size_t& i, const char* literal) {
  for (; *literal; ++literal) {
    if (*literal == ' ') {
      while (i < text.size() && is_space(text[i])) ++i;
    } else if (i >= text.size() || text[i++] != *literal) {
      return false;
    }
  }
  return true;
}

}  // namespace

Result parse_hdr(HeaderSource& s, std::string* error) {
  TextCursor in(s, 0);
  if (!hdr_line(in)) return fail(error, "cut short");
  bool has_format = false;
  for (;;) {
    const auto line = hdr_line(in);
    if (!line) return fail(error, "no blank line ends the header");
    if ((*line)[0] == '\n') break;
    if (*line == "FORMAT=32-bit_rle_rgbe\n") has_format = true;
  }
  if (!has_format) return fail(error, "no FORMAT=32-bit_rle_rgbe line");
  const auto resolution = hdr_line(in);
  std::size_t i = 0;
  if (!resolution || !scan_literal(*resolution, i, "-Y ")) return fail(error, "no -Y +X size");
  const auto height = scan_int(*resolution, i);
  if (!height || !scan_literal(*resolution, i, " +X ")) return fail(error, "no -Y +X size");
  const auto width = scan_int(*resolution, i);
  if (!width || *width <= 0 || *height <= 0) return fail(error, "bad dimensions");
  ImageHeader header;
  header.width = static_cast<std::uint64_t>(*width);
  header.height = static_cast<std::uint64_t>(*height);
  header.channels = 3;
  header.bits_per_sample = 32;
  header.work_bytes = mul_sat(header.pixels(), 12);  // the float image before conversion
  return header;
}

}  // namespace ltfit::header_internal
