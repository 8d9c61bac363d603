// The text forms of protocols 0 and 1 (pickle_machine.h): decimal numbers, Python 2's quoted
// str reprs and raw-unicode-escape text, each from one line. Pure functions, thread-safe.
#include <cstdint>
#include <string>
#include <string_view>

#include "formats/pickle_machine.h"

namespace ltfit::pickle::detail {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The value of `count` hex digits at `at` in `text`; throws when they are not there.
std::uint32_t hex_value(std::string_view text, std::size_t at, std::size_t count) {
  if (count > text.size() - at) throw PickleError("pickle string ends inside an escape");
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const int d = hex_digit(text[at + i]);
    if (d < 0) throw PickleError("pickle string has a malformed \\x or \\u escape");
    v = v * 16 + std::uint32_t(d);
  }
  return v;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    throw PickleError("pickle UNICODE escapes a code point that is not a character");
  }
  if (cp < 0x80) {
    out.push_back(char(cp));
  } else if (cp < 0x800) {
    out.push_back(char(0xC0 | (cp >> 6)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(char(0xE0 | (cp >> 12)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (cp >> 18)));
    out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

// A text opcode's decimal integer (an optional sign, then digits).
std::int64_t parse_decimal(std::string_view text, const char* opcode) {
  std::size_t at = text.size() > 0 && (text[0] == '-' || text[0] == '+') ? 1 : 0;
  if (at == text.size()) throw PickleError(std::string("pickle ") + opcode + " is not a number");
  std::uint64_t magnitude = 0;
  for (; at < text.size(); ++at) {
    const char c = text[at];
    if (c < '0' || c > '9' || magnitude > (std::uint64_t(INT64_MAX) - 9) / 10) {
      throw PickleError(std::string("pickle ") + opcode + " is not an int64 number");
    }
    magnitude = magnitude * 10 + std::uint64_t(c - '0');
  }
  return text[0] == '-' ? -std::int64_t(magnitude) : std::int64_t(magnitude);
}

// A STRING opcode's bytes: Python 2's repr of a str, quoted, with its escapes.
std::string unquote(std::string_view line) {
  if (line.size() < 2 || (line[0] != '\'' && line[0] != '"') || line.back() != line[0]) {
    throw PickleError("pickle STRING is not quoted");
  }
  const std::string_view body = line.substr(1, line.size() - 2);
  std::string out;
  out.reserve(body.size());
  for (std::size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 == body.size()) {
      out.push_back(body[i]);
      continue;
    }
    const char e = body[++i];
    static constexpr std::string_view kFrom = "abfnrtv", kTo = "\a\b\f\n\r\t\v";
    if (const std::size_t k = kFrom.find(e); k != std::string_view::npos) {
      out.push_back(kTo[k]);
    } else if (e == 'x') {
      out.push_back(char(hex_value(body, i + 1, 2)));
      i += 2;
    } else if (e >= '0' && e <= '7') {
      unsigned v = 0;
      std::size_t n = 0;
      for (; n < 3 && i + n < body.size() && body[i + n] >= '0' && body[i + n] <= '7'; ++n) {
        v = v * 8 + unsigned(body[i + n] - '0');
      }
      out.push_back(char(v & 0xff));
      i += n - 1;
    } else if (e == '\\' || e == '\'' || e == '"') {
      out.push_back(e);
    } else {
      out.push_back('\\');  // Python keeps an unknown escape as it is
      out.push_back(e);
    }
  }
  return out;
}

// A UNICODE opcode's text as UTF-8: raw-unicode-escape (Latin-1 bytes, \uXXXX, \UXXXXXXXX).
std::string raw_unicode(std::string_view line) {
  std::string out;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && (line[i + 1] == 'u' || line[i + 1] == 'U')) {
      const std::size_t digits = line[i + 1] == 'u' ? 4 : 8;
      append_utf8(out, hex_value(line, i + 2, digits));
      i += 1 + digits;
    } else {
      append_utf8(out, std::uint8_t(line[i]));
    }
  }
  return out;
}

}  // namespace ltfit::pickle::detail
