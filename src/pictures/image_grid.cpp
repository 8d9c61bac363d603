#include "ltfit/pictures/image_grid.h"

#include <cmath>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "ltfit/util/atomic_file.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

constexpr int kMinGridCell = 160;  // small images are scaled up so captions stay readable
constexpr int kCaptionHeight = 22;
constexpr int kGap = 6;

// `caption` as drawn under a tile `width` pixels wide: cut to fit, ending in "...", so that it
// never runs under the next tile.
std::string fitted_caption(std::string caption, int width) {
  const auto text_width = [](const std::string& text) {
    int baseline = 0;
    return cv::getTextSize(text, cv::FONT_HERSHEY_SIMPLEX, 0.5, 1, &baseline).width;
  };
  if (text_width(caption) <= width) return caption;
  while (!caption.empty() && text_width(caption + "...") > width) {
    do {  // a whole UTF-8 character (its continuation bytes are 10xxxxxx)
      caption.pop_back();
    } while (!caption.empty() && (static_cast<unsigned char>(caption.back()) & 0xC0) == 0x80);
  }
  return caption + "...";
}

}  // namespace

EncodedPng encode_png(const torch::Tensor& rgb) {
  LTFIT_CHECK(rgb.dim() == 3 && rgb.size(2) == 3 && rgb.scalar_type() == torch::kUInt8,
              "the picture must be uint8 [H,W,3]");
  const torch::Tensor pixels = rgb.contiguous().cpu();
  const cv::Mat tile(static_cast<int>(pixels.size(0)), static_cast<int>(pixels.size(1)), CV_8UC3,
                     pixels.data_ptr<std::uint8_t>());
  cv::Mat bgr;
  cv::cvtColor(tile, bgr, cv::COLOR_RGB2BGR);
  std::vector<uchar> png;
  if (!cv::imencode(".png", bgr, png)) throw RuntimeError("cannot encode a picture as PNG");
  return {std::string(png.begin(), png.end()), bgr.rows, bgr.cols};
}

EncodedPng encode_image_grid(const torch::Tensor& images, const std::vector<std::string>& captions,
                             int columns) {
  LTFIT_CHECK(images.dim() == 4 && images.size(3) == 3 && images.scalar_type() == torch::kUInt8,
              "images must be uint8 [N,H,W,3]");
  const torch::Tensor rgb = images.contiguous().cpu();
  const int n = static_cast<int>(rgb.size(0));
  const int h = static_cast<int>(rgb.size(1)), w = static_cast<int>(rgb.size(2));
  const double scale = std::max(1.0, static_cast<double>(kMinGridCell) / std::max(h, w));
  const int cell_w = static_cast<int>(w * scale), cell_h = static_cast<int>(h * scale);
  const int cols = columns > 0 ? columns : std::max(1, static_cast<int>(std::ceil(std::sqrt(n))));
  const int rows = (n + cols - 1) / cols;
  cv::Mat canvas(rows * (cell_h + kCaptionHeight + kGap) + kGap, cols * (cell_w + kGap) + kGap,
                 CV_8UC3, cv::Scalar(255, 255, 255));
  for (int i = 0; i < n; ++i) {
    cv::Mat tile(h, w, CV_8UC3, rgb[i].data_ptr<std::uint8_t>());
    cv::Mat bgr, big;
    cv::cvtColor(tile, bgr, cv::COLOR_RGB2BGR);
    cv::resize(bgr, big, cv::Size(cell_w, cell_h), 0, 0, cv::INTER_NEAREST);
    const int x = kGap + (i % cols) * (cell_w + kGap);
    const int y = kGap + (i / cols) * (cell_h + kCaptionHeight + kGap);
    big.copyTo(canvas(cv::Rect(x, y, cell_w, cell_h)));
    const std::string caption =
        i < static_cast<int>(captions.size()) ? fitted_caption(captions[i], cell_w - 4) : "";
    cv::putText(canvas, caption, cv::Point(x + 2, y + cell_h + kCaptionHeight - 6),
                cv::FONT_HERSHEY_SIMPLEX, 0.5, cv::Scalar(0, 0, 0), 1, cv::LINE_AA);
  }
  std::vector<uchar> png;
  if (!cv::imencode(".png", canvas, png)) throw RuntimeError("cannot encode an image grid as PNG");
  return {std::string(png.begin(), png.end()), canvas.rows, canvas.cols};
}

void write_image_grid(const torch::Tensor& images, const std::vector<std::string>& captions,
                      int columns, const std::string& path) {
  write_file_atomic(path, encode_image_grid(images, captions, columns).bytes);
}

}  // namespace ltfit
