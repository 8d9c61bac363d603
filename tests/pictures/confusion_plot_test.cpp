// The confusion-matrix heat map (pictures/confusion_plot.h): a decodable PNG of the size it states,
// shaded by each row's share, bounded for a thousand classes.
#include "ltfit/pictures/confusion_plot.h"

#include <catch2/catch.hpp>

#include <opencv2/imgcodecs.hpp>

namespace {

cv::Mat decode(const ltfit::EncodedPng& png) {
  const std::vector<uchar> bytes(png.bytes.begin(), png.bytes.end());
  return cv::imdecode(bytes, cv::IMREAD_COLOR);
}

// Pixels of the darkest shade (a row's whole share) and of the lightest (none).
std::pair<int, int> shade_pixels(const cv::Mat& img) {
  int dark = 0, white = 0;
  for (int y = 0; y < img.rows; ++y) {
    for (int x = 0; x < img.cols; ++x) {
      const auto p = img.at<cv::Vec3b>(y, x);
      dark += p == cv::Vec3b(107, 48, 8);
      white += p == cv::Vec3b(255, 255, 255);
    }
  }
  return {dark, white};
}

}  // namespace

TEST_CASE("a confusion matrix is a PNG of the size it states, shaded by row share",
          "[confusion_plot]") {
  const ltfit::EncodedPng png =
      ltfit::encode_confusion_matrix({{12, 0}, {10, 2}}, {"cat", "dog"}, "validation: 24 images");
  const cv::Mat img = decode(png);
  REQUIRE_FALSE(img.empty());
  CHECK((img.rows == png.height && img.cols == png.width));
  // Row "cat" is all on the diagonal: its first cell is the darkest shade, a 72 px square less
  // the count drawn on it.
  const auto [dark, white] = shade_pixels(img);
  CHECK(dark > 72 * 72 / 2);
  CHECK(white > 0);
  // No image at all of a row: light cells only.
  const auto empty =
      shade_pixels(decode(ltfit::encode_confusion_matrix({{0, 0}, {0, 0}}, {"a", "b"}, "none")));
  CHECK(empty.first == 0);
}

TEST_CASE("'predicted' sits under the column names it titles, nothing between title and matrix",
          "[confusion_plot]") {
  const cv::Mat img = decode(ltfit::encode_confusion_matrix({{3, 1}, {0, 4}}, {"cat", "dog"}, "t"));
  REQUIRE_FALSE(img.empty());
  // The matrix's grey frame: its first and last rows.
  const auto frame_row = [&](int y) {
    int grey = 0;
    for (int x = 0; x < img.cols; ++x) grey += img.at<cv::Vec3b>(y, x) == cv::Vec3b(120, 120, 120);
    return grey > 100;
  };
  int frame_top = 0, frame_bottom = img.rows - 1;
  while (frame_top < img.rows && !frame_row(frame_top)) ++frame_top;
  while (frame_bottom > 0 && !frame_row(frame_bottom)) --frame_bottom;
  REQUIRE(frame_top < frame_bottom);
  const auto ink_rows = [&](int from, int to) {  // rows in [from, to) holding dark pixels
    int rows = 0;
    for (int y = from; y < to; ++y) {
      bool ink = false;
      for (int x = 0; x < img.cols; ++x) {
        const auto p = img.at<cv::Vec3b>(y, x);
        ink = ink || (p[0] < 128 && p[1] < 128 && p[2] < 128);
      }
      rows += ink;
    }
    return rows;
  };
  CHECK(ink_rows(30, frame_top) == 0);  // below the title's line, above the matrix: empty
  // Under the column names (each name's text runs down from the frame): a line of text.
  CHECK(ink_rows(img.rows - 24, img.rows) >= 6);
}

TEST_CASE("a thousand classes give small cells, not a huge picture", "[confusion_plot]") {
  const int n = 1000;
  std::vector<std::vector<std::int64_t>> counts(n, std::vector<std::int64_t>(n, 0));
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) {
    counts[i][i] = 5;
    names.push_back("cl\xc3\xa4ss " + std::to_string(i));  // non-ASCII: drawn as '-'
  }
  const ltfit::EncodedPng png = ltfit::encode_confusion_matrix(counts, names, "ImageNet");
  CHECK((png.width <= 1100 && png.height <= 1100));  // one pixel per cell
  CHECK(decode(png).cols == png.width);
}
