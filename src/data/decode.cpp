// Reading and decoding one image file; see decode.h.
#include "data/decode.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <opencv2/imgcodecs.hpp>

#include "data/image_header_parsers.h"
#include "data/regular_file.h"
#include "data/system_io.h"

namespace ltfit {
namespace {

constexpr std::uint64_t kMaxFileBytes = 1ULL << 30;  // refuse files over 1 GiB
constexpr std::size_t kProbeTailBytes = 64 * 1024;   // probe_image_file's look at a JPEG's end

// An input's encoded bytes, open: its own file, its member's range of another file (a tar
// shard's), or bytes held in memory (a request's body). `error` says why not when !ok().
class EncodedBytes {
 public:
  EncodedBytes(const ImageInput& input, std::string* error)
      : file_(input.member ? *input.member.file : input.path),
        memory_(input.encoded),
        fd_(memory_ ? -1 : open_regular_file(file_, &size_, error)) {
    if (memory_) {
      size_ = memory_->size();
      return;
    }
    if (fd_.get() < 0 || !input.member) return;
    const FileRange& range = input.member;
    if (range.offset > size_ || range.size > size_ - range.offset) {
      *error =
          "its bytes lie past the end of '" + file_ + "' (the file changed since it was indexed?)";
      outside_ = true;
      return;
    }
    base_ = range.offset;
    size_ = range.size;
  }
  bool ok() const { return memory_ || (fd_.get() >= 0 && !outside_); }
  std::uint64_t size() const { return size_; }
  std::size_t read(std::uint64_t offset, std::size_t n, std::uint8_t* out) const {
    if (!memory_) return read_at(fd_.get(), file_, base_ + offset, n, out);
    if (offset >= size_) return 0;
    const auto count = static_cast<std::size_t>(std::min<std::uint64_t>(n, size_ - offset));
    std::memcpy(out, memory_->data() + offset, count);
    return count;
  }
  ByteReader reader() const {
    return [this](std::uint64_t offset, std::size_t n, std::uint8_t* out) {
      return read(offset, n, out);
    };
  }

 private:
  std::string file_;
  std::shared_ptr<const std::string> memory_;
  std::uint64_t size_ = 0;
  FileHandle fd_;
  std::uint64_t base_ = 0;
  bool outside_ = false;  // the range lies past the file's end
};

// Scanning back from the end of a JPEG's `bytes` (its last ones, or all): true when the EOI
// marker comes before the start of the last scan (entropy-coded data never contains FF D9 or
// FF DA), false when the scan start comes first, nullopt when neither is in `bytes`.
std::optional<bool> jpeg_end_seen(const std::vector<uchar>& bytes) {
  for (size_t i = bytes.size() - 1; i >= 1 && i < bytes.size(); --i) {
    if (bytes[i - 1] != 0xFF) continue;
    if (bytes[i] == 0xD9) return true;
    if (bytes[i] == 0xDA) return false;
  }
  return std::nullopt;
}

// A JPEG is complete when its EOI marker comes after the start of its last scan.
bool jpeg_complete(const std::vector<uchar>& bytes) { return jpeg_end_seen(bytes).value_or(false); }

// OpenCV's reduced-decode flag for the largest power-of-two reduction that keeps at least
// `eighths`/8 of each side.
int decode_flags(int eighths) {
  if (eighths <= 1) return cv::IMREAD_REDUCED_COLOR_8;
  if (eighths <= 2) return cv::IMREAD_REDUCED_COLOR_4;
  if (eighths <= 4) return cv::IMREAD_REDUCED_COLOR_2;
  return cv::IMREAD_COLOR;
}

// Decodes a JPEG through libjpeg-turbo into `result`; false with *error set when it failed,
// false with no error when the file is one it leaves to OpenCV (CMYK).
bool decode_with_libjpeg(const std::vector<uchar>& bytes, const JpegRequest& request,
                         DecodedImage& result, std::string* error) {
#ifdef LTFIT_WITH_LIBJPEG_TURBO
  JpegDecoded decoded = decode_jpeg(bytes, request);
  if (decoded.unsupported) return false;
  if (decoded.image.empty()) {
    *error = "not a decodable image (the jpeg decoder failed: " + decoded.error + ")";
    return false;
  }
  result.image = std::move(decoded.image);
  result.region = decoded.region;
  result.whole = decoded.whole;
  return true;
#else
  (void)bytes, (void)request, (void)result, (void)error;
  return false;
#endif
}

}  // namespace

std::uint64_t decode_memory_estimate(const ImageHeader& header, std::uint64_t file_bytes,
                                     int eighths) {
  using header_internal::add_sat;
  using header_internal::mul_sat;
  const std::uint64_t out_pixels =
      mul_sat(jpeg_scaled_side(header.width, eighths), jpeg_scaled_side(header.height, eighths));
  // The file in memory, the decoder's own buffers, the 8-bit BGR output and one copy of it
  // (EXIF rotation, channel conversion).
  return add_sat(add_sat(file_bytes, header.work_bytes), mul_sat(out_pixels, 6));
}

std::string probe_image_file(const ImageInput& input, const ImageLimits& limits) {
  if (input.image) return held_image_problem(input.image, limits);
  std::string error;
  const EncodedBytes file(input, &error);
  if (!file.ok()) return error;
  const std::uint64_t size = file.size();
  if (size == 0) return "empty file (0 bytes)";
  if (size > kMaxFileBytes) return "file too large (" + std::to_string(size) + " bytes)";
  const std::optional<ImageHeader> header = read_image_header(file.reader(), size, &error);
  if (!header) return error.empty() ? "unknown error" : error;
  if (std::string refused = check_image_limits(*header, limits); !refused.empty()) return refused;
  if (header->format != ImageFormat::kJpeg) return "";
  const std::size_t tail = static_cast<std::size_t>(std::min<std::uint64_t>(size, kProbeTailBytes));
  std::vector<uchar> bytes(tail);
  if (file.read(size - tail, tail, bytes.data()) != tail) return "short read";
  const std::optional<bool> complete = jpeg_end_seen(bytes);
  // Neither marker in the tail: only a whole-file scan (the decode's) can tell.
  if (complete.value_or(tail < size)) return "";
  return "truncated JPEG (no end-of-image marker)";
}

std::optional<ImageHeader> read_file_header(const ImageInput& input, std::string* error) {
  const EncodedBytes file(input, error);
  if (!file.ok()) return std::nullopt;
  return read_image_header(file.reader(), file.size(), error);
}

DecodedImage decode_bgr(const ImageInput& input, const DecodeRequest& request,
                        const DecodeLimits& limits, std::string* error) {
  if (input.image) return decode_held_image(input.image, limits, error);
  DecodedImage result;
  const auto fail = [&](std::string reason) {
    *error = std::move(reason);
    result.image.release();
    return std::move(result);
  };
  const EncodedBytes file(input, error);
  if (!file.ok()) return result;
  const std::uint64_t size = file.size();
  if (size == 0) return fail("empty file (0 bytes)");
  if (size > kMaxFileBytes) return fail("file too large (" + std::to_string(size) + " bytes)");
  const std::optional<ImageHeader> header = read_image_header(file.reader(), size, error);
  if (!header) return result;
  if (std::string refused = check_image_limits(*header, limits.image); !refused.empty()) {
    return fail(std::move(refused));
  }
  // Only now, with the size known to be within the limits, does memory get committed: first the
  // budget for the whole decode, then the file's bytes, then the decoder's buffers.
  const bool jpeg = header->format == ImageFormat::kJpeg;
  const int eighths =
      jpeg ? jpeg_eighths(header->width, header->height, request.min_short_side) : 8;
  DecodeBudget& budget = limits.budget ? *limits.budget : default_decode_budget();
  result.lease = budget.acquire(decode_memory_estimate(*header, size, eighths));
  std::vector<uchar> bytes(static_cast<std::size_t>(size));
  if (file.read(0, bytes.size(), bytes.data()) != bytes.size()) return fail("short read");
  if (jpeg && !jpeg_complete(bytes)) return fail("truncated JPEG (no end-of-image marker)");
  result.scale = {eighths, jpeg, header->width, header->height};
  std::string jpeg_error;
  if (jpeg && decode_with_libjpeg(bytes, {eighths, request.region_of}, result, &jpeg_error)) {
    return result;
  }
  if (!jpeg_error.empty()) return fail(std::move(jpeg_error));
  result.image = cv::imdecode(bytes, decode_flags(eighths));
  if (result.image.empty()) {
    return fail("not a decodable image (the " + image_format_name(header->format) +
                " decoder failed)");
  }
  if (result.image.type() != CV_8UC3) {
    return fail("decoded to an unexpected pixel type " + std::to_string(result.image.type()));
  }
  result.whole = result.image.size();
  result.region = cv::Rect(0, 0, result.whole.width, result.whole.height);
  return result;
}

DecodedImage decode_bgr_cached(const ImageInput& input, const DecodeRequest& request,
                               const DecodeLimits& limits, DecodedImageCache* cache,
                               std::string* error) {
  if (cache == nullptr || input.image) return decode_bgr(input, request, limits, error);
  const std::string& path = input.path;
  const auto same_scale = [&request](const DecodedImageCache::Entry& e) {
    const DecodeScale& s = e.scale;
    return s.eighths ==
           (s.jpeg ? jpeg_eighths(s.file_width, s.file_height, request.min_short_side) : 8);
  };
  if (std::optional<DecodedImageCache::Entry> hit = cache->find(path, same_scale)) {
    DecodedImage result;
    result.image = hit->image;
    result.whole = hit->image.size();
    result.region = cv::Rect(0, 0, result.whole.width, result.whole.height);
    result.scale = hit->scale;
    return result;
  }
  DecodedImage result = decode_bgr(input, DecodeRequest{request.min_short_side, {}}, limits, error);
  if (!result.image.empty()) cache->insert(path, {result.image, result.scale});
  return result;
}

DecodedImage decode_bgr(const ImageInput& input, double min_short_side, const DecodeLimits& limits,
                        std::string* error) {
  return decode_bgr(input, DecodeRequest{min_short_side, {}}, limits, error);
}

}  // namespace ltfit
