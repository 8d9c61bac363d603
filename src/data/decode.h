// Reading and decoding one image file into an 8-bit BGR cv::Mat (private to src/data).
//
// The file is read into memory first, which lets us reject empty and truncated JPEGs (libjpeg
// would silently pad them with grey) and read the JPEG header to decode large files at 1/2,
// 1/4 or 1/8 scale, which is several times faster. EXIF orientation is applied. Grey, 16-bit and
// RGBA files come out as 8-bit BGR. Never throws for a bad file; thread-safe.
#pragma once

#include <string>

#include <opencv2/core.hpp>

namespace ltfit {

// Decodes `path` to CV_8UC3 BGR. A JPEG is decoded at the smallest of 1/8, 1/4, 1/2 scale whose
// shorter side is still >= `min_short_side` (EXIF rotation does not change the shorter side);
// other formats, JPEGs no reduction qualifies for, and min_short_side <= 0 decode at full size.
// Returns an empty Mat and sets `error`
// ("file not found", "empty file (0 bytes)", "truncated JPEG ...", "not a decodable image", ...)
// on failure. May still throw std::bad_alloc or cv::Exception on resource exhaustion; callers
// that promise never to throw catch those.
cv::Mat decode_bgr(const std::string& path, double min_short_side, std::string* error);

// Runs `body(reason)`, which returns an image or leaves `reason` saying why not, and turns any
// exception into a failure "<what> failed: ...", so the public loaders never throw. Sets *error
// (when given) on failure.
template <typename Body>
auto run_never_throwing(const char* what, std::string* error, Body&& body)
    -> decltype(body(*error)) {
  std::string reason;
  decltype(body(reason)) result;
  try {
    result = body(reason);
  } catch (const std::exception& e) {  // cv::Exception, std::bad_alloc, c10::Error
    reason = std::string(what) + " failed: " + e.what();
    result.reset();
  } catch (...) {
    reason = std::string(what) + " failed: unknown exception";
    result.reset();
  }
  if (!result && error) *error = reason.empty() ? "unknown error" : reason;
  return result;
}

}  // namespace ltfit
