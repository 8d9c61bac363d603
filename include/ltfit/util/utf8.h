// Names as valid UTF-8, losslessly: file, folder, class and root names are bytes on Linux, not
// necessarily UTF-8, but JSON (and tools reading our CSV files) need valid UTF-8.
//
// The escaping, used for every string ltfit writes into a JSON document or a CSV report:
//   - a byte that is part of a well-formed UTF-8 sequence is kept as it is, except
//   - a backslash, written as two backslashes `\\`, and
//   - a byte that is not part of a well-formed UTF-8 sequence (e.g. Latin-1 0xE9, a lone
//     continuation byte, an overlong form, an encoded surrogate), written as `\xNN` (two
//     lower-case hex digits).
// So a name that is valid UTF-8 without a backslash is written unchanged, and every name is
// recovered exactly by unescape_utf8 (in Python, see README "Names that are not UTF-8"). Pure
// functions, thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ltfit {

// True when `bytes` is well-formed UTF-8 (Unicode 15, table 3-7: no overlongs, no surrogates,
// nothing above U+10FFFF).
bool is_valid_utf8(std::string_view bytes);

// `bytes` escaped as above; always valid UTF-8.
std::string escape_utf8(std::string_view bytes);

// The bytes escape_utf8 was given; nullopt when `text` holds a backslash that starts neither
// `\\` nor `\xNN`.
std::optional<std::string> unescape_utf8(std::string_view text);

}  // namespace ltfit
