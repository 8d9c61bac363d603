// Decoding a JPEG through libjpeg-turbo's libjpeg API; see jpeg_decode.h.
#include "data/jpeg_decode.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

// jpeglib.h needs size_t and FILE declared before it.
#include <jpeglib.h>

namespace ltfit {
namespace {

constexpr std::size_t kExifHeader = 6;  // "Exif\0\0"

// libjpeg's error manager, returning to decode_jpeg's setjmp instead of calling exit().
struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings (corrupt data libjpeg decodes around) are counted, not printed, and the image kept,
// as OpenCV keeps it; trace messages are dropped.
void on_message(j_common_ptr cinfo, int level) {
  if (level < 0) ++cinfo->err->num_warnings;
}

// Called by libjpeg while it reads a multi-scan file: refuses a file of too many scans.
void on_progress(j_common_ptr cinfo) {
  if (cinfo->is_decompressor == 0) return;
  const auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->input_scan_number > kMaxJpegScans) {
    auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
    std::snprintf(err->message, sizeof(err->message), "progressive JPEG of over %d scans",
                  kMaxJpegScans);
    std::longjmp(err->jump, 1);
  }
}

// Everything a decode holds, so that nothing with a destructor lives in the frame libjpeg may
// longjmp out of.
struct Session {
  jpeg_decompress_struct cinfo{};
  ErrorManager err{};
  jpeg_progress_mgr progress{};
  bool created = false;
  std::vector<JSAMPROW> rows;
  cv::Mat decoded;  // the region, as libjpeg writes it (grey or BGR)

  Session() = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
};

std::uint16_t read16(const std::uint8_t* p, bool little) {
  return little ? static_cast<std::uint16_t>(p[0] | (p[1] << 8))
                : static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}

std::uint32_t read32(const std::uint8_t* p, bool little) {
  return little ? (std::uint32_t{p[0]} | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) |
                   (std::uint32_t{p[3]} << 24))
                : ((std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) |
                   (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]});
}

// The first APP1 segment holding EXIF, as jpeg_save_markers kept it, or 1.
int saved_orientation(const jpeg_decompress_struct& cinfo) {
  for (jpeg_saved_marker_ptr m = cinfo.marker_list; m != nullptr; m = m->next) {
    if (m->marker == JPEG_APP0 + 1 && m->data_length >= kExifHeader &&
        std::memcmp(m->data, "Exif\0\0", kExifHeader) == 0) {
      return exif_orientation(m->data, m->data_length);
    }
  }
  return 1;
}

// `image` turned upright as EXIF `orientation` says, as OpenCV's imdecode turns it.
cv::Mat oriented(const cv::Mat& image, int orientation) {
  if (orientation < 2 || orientation > 8) return image;
  cv::Mat out;
  switch (orientation) {
    case 2:
      cv::flip(image, out, 1);
      return out;
    case 3:
      cv::flip(image, out, -1);
      return out;
    case 4:
      cv::flip(image, out, 0);
      return out;
    default:
      break;
  }
  cv::transpose(image, out);
  if (orientation == 5) return out;
  cv::Mat flipped;
  cv::flip(out, flipped, orientation == 6 ? 1 : orientation == 7 ? -1 : 0);
  return flipped;
}

// The part of the whole `size` image `request` asks for, within it; the whole image when no
// region is asked for or the asked one is empty.
cv::Rect asked_region(const JpegRequest& request, cv::Size size) {
  const cv::Rect whole(0, 0, size.width, size.height);
  if (!request.region_of) return whole;
  const cv::Rect asked = request.region_of(size) & whole;
  return asked.empty() ? whole : asked;
}

// `region` grown by one iMCU (the unit of the entropy-coded data, 8 to 32 output pixels) to the
// left and right, within the image: chroma upsampling reads the chroma sample beyond each pixel,
// which at the edge of a cropped decode libjpeg replaces by the edge's own, so the columns asked
// for get the neighbours a whole decode gives them. (Rows need no margin: jpeg_skip_scanlines
// keeps the context rows, and the tests check both.)
cv::Rect with_margin(const cv::Rect& region, const jpeg_decompress_struct& cinfo) {
  const int across = cinfo.max_h_samp_factor * cinfo.min_DCT_scaled_size;
  const cv::Rect grown(region.x - across, region.y, region.width + 2 * across, region.height);
  return grown & cv::Rect(0, 0, static_cast<int>(cinfo.output_width),
                          static_cast<int>(cinfo.output_height));
}

// Starts the decompression and reads the rows and columns of `want` (columns from an iMCU
// boundary at or left of want.x, which *first_column receives) into s.decoded; false with
// s.err.message set when rows are missing. Called from run_libjpeg after its setjmp (libjpeg's
// errors jump back there, over this frame, which holds nothing with a destructor).
bool read_region(Session& s, const cv::Rect& want, bool grey, int* first_column) {
  jpeg_start_decompress(&s.cinfo);
  auto x = static_cast<JDIMENSION>(0);
  auto width = s.cinfo.output_width;
  if (static_cast<JDIMENSION>(want.width) < width) {
    x = static_cast<JDIMENSION>(want.x);
    width = static_cast<JDIMENSION>(want.width);
    jpeg_crop_scanline(&s.cinfo, &x, &width);  // x moves down to an iMCU boundary
  }
  if (want.y > 0) jpeg_skip_scanlines(&s.cinfo, static_cast<JDIMENSION>(want.y));
  s.decoded.create(want.height, static_cast<int>(s.cinfo.output_width), grey ? CV_8UC1 : CV_8UC3);
  s.rows.resize(static_cast<std::size_t>(want.height));
  for (int r = 0; r < want.height; ++r) s.rows[static_cast<std::size_t>(r)] = s.decoded.ptr(r);
  auto done = static_cast<JDIMENSION>(0);
  while (done < static_cast<JDIMENSION>(want.height)) {
    const JDIMENSION n = jpeg_read_scanlines(&s.cinfo, s.rows.data() + done,
                                             static_cast<JDIMENSION>(want.height) - done);
    if (n == 0) break;  // a suspending source cannot happen with memory; guard anyway
    done += n;
  }
  if (done < static_cast<JDIMENSION>(want.height)) {
    std::snprintf(s.err.message, sizeof(s.err.message), "decoded %u of %d rows", done, want.height);
    return false;
  }
  *first_column = static_cast<int>(x);
  return true;
}

// The libjpeg part of the decode: fills `s.decoded` with the rows and columns of `want` (or a
// little more: columns start on an iMCU boundary) and returns the decoded region, or returns
// false with s.err.message set. No object with a destructor is created here after setjmp.
bool run_libjpeg(Session& s, const std::vector<std::uint8_t>& bytes, const JpegRequest& request,
                 JpegDecoded& out, int* orientation) {
  s.cinfo.err = jpeg_std_error(&s.err.pub);
  s.err.pub.error_exit = on_error;
  s.err.pub.emit_message = on_message;
  s.err.pub.output_message = [](j_common_ptr) {};
  s.progress.progress_monitor = on_progress;
  if (setjmp(s.err.jump) != 0) return false;
  jpeg_create_decompress(&s.cinfo);
  s.created = true;
  s.cinfo.progress = &s.progress;
  jpeg_mem_src(&s.cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_save_markers(&s.cinfo, JPEG_APP0 + 1, 0xFFFF);
  jpeg_read_header(&s.cinfo, TRUE);
  const J_COLOR_SPACE space = s.cinfo.jpeg_color_space;
  if (space == JCS_CMYK || space == JCS_YCCK || s.cinfo.num_components == 2 ||
      s.cinfo.num_components > 3) {
    out.unsupported = true;
    return false;
  }
  *orientation = saved_orientation(s.cinfo);
  const bool grey = s.cinfo.num_components == 1;
  s.cinfo.out_color_space = grey ? JCS_GRAYSCALE : JCS_EXT_BGR;
  s.cinfo.scale_num = static_cast<unsigned>(std::clamp(request.eighths, 1, 8));
  s.cinfo.scale_denom = 8;
  jpeg_calc_output_dimensions(&s.cinfo);
  const cv::Size stored(static_cast<int>(s.cinfo.output_width),
                        static_cast<int>(s.cinfo.output_height));
  // A turned image's region is asked of its upright size; only an upright one is cut.
  const bool upright = *orientation < 5;
  out.whole = upright ? stored : cv::Size(stored.height, stored.width);
  out.region = *orientation == 1 ? asked_region(request, stored)
                                 : cv::Rect(0, 0, stored.width, stored.height);
  const cv::Rect want = with_margin(out.region, s.cinfo);
  int first_column = 0;
  if (!read_region(s, want, grey, &first_column)) return false;
  out.warnings = static_cast<int>(s.err.pub.num_warnings);
  jpeg_abort_decompress(&s.cinfo);
  // The decoded rows start at first_column; what was asked for lies inside, away from their
  // edges.
  s.decoded = s.decoded.colRange(out.region.x - first_column,
                                 out.region.x - first_column + out.region.width);
  return true;
}

}  // namespace

int exif_orientation(const std::uint8_t* exif, std::size_t size) {
  // "Exif\0\0", then a TIFF file: byte order, 42, the first IFD's offset; that IFD's entries are
  // 12 bytes each: tag, type, count, value. Orientation is tag 0x0112, a SHORT.
  if (size < kExifHeader + 8) return 1;
  const std::uint8_t* tiff = exif + kExifHeader;
  const std::size_t n = size - kExifHeader;
  bool little = false;
  if (tiff[0] == 'I' && tiff[1] == 'I') {
    little = true;
  } else if (!(tiff[0] == 'M' && tiff[1] == 'M')) {
    return 1;
  }
  if (read16(tiff + 2, little) != 42) return 1;
  const std::uint32_t ifd = read32(tiff + 4, little);
  if (ifd > n || n - ifd < 2) return 1;
  const std::uint16_t entries = read16(tiff + ifd, little);
  for (std::size_t i = 0; i < entries; ++i) {
    const std::size_t at = ifd + 2 + i * 12;
    if (at > n || n - at < 12) return 1;
    if (read16(tiff + at, little) != 0x0112) continue;
    if (read16(tiff + at + 2, little) != 3) return 1;  // not a SHORT
    const std::uint16_t value = read16(tiff + at + 8, little);
    return value >= 1 && value <= 8 ? value : 1;
  }
  return 1;
}

JpegDecoded decode_jpeg(const std::vector<std::uint8_t>& bytes, const JpegRequest& request) {
  JpegDecoded out;
  const auto session = std::make_unique<Session>();
  int orientation = 1;
  if (!run_libjpeg(*session, bytes, request, out, &orientation)) {
    if (!out.unsupported) out.error = session->err.message;
    out.image.release();
    return out;
  }
  cv::Mat bgr = session->decoded;
  if (bgr.channels() == 1) cv::cvtColor(session->decoded, bgr, cv::COLOR_GRAY2BGR);
  out.image = oriented(bgr, orientation);
  if (orientation != 1) out.region = cv::Rect(0, 0, out.whole.width, out.whole.height);
  return out;
}

}  // namespace ltfit
