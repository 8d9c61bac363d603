// Reading and decoding one image file into an 8-bit BGR cv::Mat (private to src/data); an image
// a sample source holds decoded (sample.h's SampleImage) is taken as it is, checked against
// data.max_pixels only (it has no file format), never cached (it is in memory already).
//
// The file is opened only if it is a regular file (a FIFO, socket, device, directory or
// dangling link is refused by its type, never opened, so nothing blocks), its header is read
// and checked against the ImageLimits (format, pixel budget) before any decoder allocates, the
// decode's peak memory is estimated from the header and taken from a DecodeBudget for as long as
// the image is held, and only then is the file read into memory and given to OpenCV. Empty and
// truncated JPEGs are rejected (libjpeg would silently pad them with grey); large JPEGs are
// decoded scaled down in the DCT domain (jpeg_decode.h: by M/8, or 1/2, 1/4, 1/8 as OpenCV does),
// and, when the caller says which part it reads, only that part. EXIF orientation is applied.
// Grey, 16-bit and RGBA files come out as 8-bit BGR. Never throws for a bad file; an open, stat
// or read the system keeps failing (EMFILE, EIO, ...) is retried, then throws SystemIoError
// (system_io.h): it is no fault of the file's. Thread-safe.
#pragma once

#include <new>
#include <string>

#include <opencv2/core.hpp>

#include "data/decode_cache.h"
#include "data/jpeg_decode.h"
#include "data/system_io.h"
#include "ltfit/data/decode_budget.h"
#include "ltfit/data/image_header.h"
#include "ltfit/data/sample.h"

namespace ltfit {

// What a decode may use: the header limits and the memory budget (nullptr: the process-wide
// default_decode_budget()).
struct DecodeLimits {
  ImageLimits image;
  DecodeBudget* budget = nullptr;
};

// What to decode. A JPEG is decoded at the cheapest M/8 scale whose shorter side is still >=
// `min_short_side` (jpeg_eighths: today 1/8, 1/4, 1/2; EXIF rotation does not change the shorter
// side); other formats, JPEGs no reduction qualifies for, and min_short_side <= 0 at full size.
// `region_of`, given the whole decoded image's size, names the part the caller reads: a JPEG is
// then decoded only there (jpeg_decode.h); other formats are decoded whole.
struct DecodeRequest {
  double min_short_side = 0;
  RegionOf region_of;
};

// A decoded image and the share of the decode budget it holds until destroyed.
struct DecodedImage {
  cv::Mat image;    // CV_8UC3 BGR: `region` of the whole decoded image; empty on failure
  cv::Rect region;  // where `image` lies in the whole decoded image: what was asked for
  cv::Size whole;   // the whole decoded image's size
  DecodeScale scale;
  DecodeBudget::Lease lease;
};

// Decodes `path` to CV_8UC3 BGR as `request` asks. On failure the image is empty and `error` says
// why ("file not found", "empty file (0 bytes)", "is a FIFO ...", "image is W×H = N pixels, over
// data.max_pixels (M); ...", "format hdr not in data.formats (...)", "truncated JPEG ...", "not a
// decodable image ..."). May still throw std::bad_alloc or cv::Exception on resource exhaustion,
// and SystemIoError; callers that promise never to throw catch the first two.
DecodedImage decode_bgr(const ImageInput& input, const DecodeRequest& request,
                        const DecodeLimits& limits, std::string* error);

// decode_bgr through `cache` (data.cache: ram; nullptr: none): an entry decoded at the scale
// this request would choose is used as it is (the whole image, no budget lease: the memory is
// the cache's); otherwise the whole image is decoded (no region, so that it can be kept) and
// offered to the cache. The pixels a caller reads are the same either way.
DecodedImage decode_bgr_cached(const ImageInput& input, const DecodeRequest& request,
                               const DecodeLimits& limits, DecodedImageCache* cache,
                               std::string* error);

// The whole image (region == the whole image).
DecodedImage decode_bgr(const ImageInput& input, double min_short_side, const DecodeLimits& limits,
                        std::string* error);

// What can be told of `path` without decoding it, with the reasons decode_bgr gives: "" when it
// is a regular, non-empty file of at most 1 GiB whose header passes `limits` (and, for a JPEG,
// whose last 64 KiB do not show it truncated), else why not. Reads the header and the file's
// tail only; the answer depends on the file's bytes alone. Never throws for a bad file.
std::string probe_image_file(const ImageInput& input, const ImageLimits& limits);

// An image a source holds (input.image set): "" when its size is sane and within
// limits.max_pixels, else why not; the whole image as decode_bgr gives it (BGR, a copy: nothing
// aliases the source's block), holding its bytes from the budget. decode_bgr and
// probe_image_file call these for such an input.
std::string held_image_problem(const SampleImage& image, const ImageLimits& limits);
DecodedImage decode_held_image(const SampleImage& image, const DecodeLimits& limits,
                               std::string* error);

// The header of `input` (a file or a member's range; not held pixels), or nullopt with `error`
// saying why not (decode_bgr's reasons). Like decode_bgr and probe_image_file, throws SystemIoError
// (system_io.h) when the system keeps failing to open or read the file.
std::optional<ImageHeader> read_file_header(const ImageInput& input, std::string* error);

// The peak bytes decoding `header` from a file of `file_bytes` is estimated to take, when the
// output is scaled by `eighths`/8 on each side.
std::uint64_t decode_memory_estimate(const ImageHeader& header, std::uint64_t file_bytes,
                                     int eighths);

// Runs `body(reason)`, which returns an image or leaves `reason` saying why not, and turns any
// exception into a failure "<what> failed: ...", so the public loaders never throw for a bad
// image. Sets *error (when given) on failure. The system's failures are no image's and pass
// through: SystemIoError (the file could not be opened or read) and std::bad_alloc (memory ran
// out); skipping the image would compute the results on fewer images than the data holds.
template <typename Body>
auto run_never_throwing(const char* what, std::string* error, Body&& body)
    -> decltype(body(*error)) {
  std::string reason;
  decltype(body(reason)) result;
  try {
    result = body(reason);
  } catch (const SystemIoError&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {  // cv::Exception, c10::Error
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
