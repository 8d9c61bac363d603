// Drawing one synthetic image (synth_draw.h): palette, background and clutter (shared with the
// shapes of synth_shapes.cpp), and the four faces (cat, dog, bear, rabbit), each drawn in
// face-local coordinates with OpenCV.
#include "data/synth_draw.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "ltfit/util/random.h"

namespace ltfit {
namespace synth_canvas {
namespace {

// Shared by both classes (RGB): fur-like tones and a few background colours.
constexpr std::array<std::array<int, 3>, 14> kPalette = {{
    {30, 30, 30},
    {240, 240, 235},
    {128, 128, 128},
    {90, 60, 40},
    {160, 110, 60},
    {210, 170, 110},
    {230, 140, 50},
    {200, 200, 180},
    {70, 70, 90},
    {150, 75, 40},
    {60, 120, 60},
    {70, 110, 170},
    {170, 60, 60},
    {200, 190, 90},
}};

double colour_distance(const cv::Scalar& a, const cv::Scalar& b) {
  return std::sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                   (a[2] - b[2]) * (a[2] - b[2]));
}

cv::Point random_point(SplitMix64& rng, const cv::Mat& image) {
  return {rng.uniform_int(0, image.cols - 1), rng.uniform_int(0, image.rows - 1)};
}

}  // namespace

cv::Scalar palette_colour(SplitMix64& rng) {
  const auto& rgb = kPalette[static_cast<size_t>(rng.uniform_int(0, kPalette.size() - 1))];
  std::array<double, 3> c{};
  for (size_t i = 0; i < 3; ++i) c[i] = std::clamp(rgb[i] + rng.uniform(-25, 25), 0.0, 255.0);
  return cv::Scalar(c[2], c[1], c[0]);
}

cv::Scalar contrasting_colour(SplitMix64& rng, const cv::Scalar& avoid, double min_distance) {
  cv::Scalar best = palette_colour(rng);
  for (int attempt = 0; attempt < 12 && colour_distance(best, avoid) < min_distance; ++attempt) {
    const cv::Scalar candidate = palette_colour(rng);
    if (colour_distance(candidate, avoid) > colour_distance(best, avoid)) best = candidate;
  }
  return best;
}

cv::Scalar fill_background(cv::Mat& image, SplitMix64& rng) {
  const cv::Scalar from = palette_colour(rng), to = palette_colour(rng);
  const double angle = rng.uniform(0, 2 * kPi), noise = rng.uniform(0, 14);
  const double dx = std::cos(angle), dy = std::sin(angle);
  const double half_extent = 0.5 * (std::abs(dx) * image.cols + std::abs(dy) * image.rows);
  for (int y = 0; y < image.rows; ++y) {
    auto* row = image.ptr<cv::Vec3b>(y);
    for (int x = 0; x < image.cols; ++x) {
      const double t = 0.5 + ((x - image.cols / 2.0) * dx + (y - image.rows / 2.0) * dy) /
                                 (2 * half_extent + 1e-9);
      const std::uint64_t bits = rng.next();
      for (int c = 0; c < 3; ++c) {
        const double jitter = (static_cast<int>((bits >> (8 * c)) & 0xFF) - 127.5) / 127.5;
        const double v = from[c] + (to[c] - from[c]) * t + noise * jitter;
        row[x][c] = cv::saturate_cast<uchar>(v);
      }
    }
  }
  return (from + to) * 0.5;
}

void draw_clutter(cv::Mat& image, SplitMix64& rng, int max_lines, int max_blobs) {
  const double short_side = std::min(image.rows, image.cols);
  const int lines = rng.uniform_int(0, max_lines), blobs = rng.uniform_int(0, max_blobs);
  for (int i = 0; i < lines; ++i) {
    const int thickness = std::max(1, static_cast<int>(short_side * rng.uniform(0.003, 0.015)));
    cv::line(image, random_point(rng, image), random_point(rng, image), palette_colour(rng),
             thickness, cv::LINE_AA);
  }
  for (int i = 0; i < blobs; ++i) {
    const cv::Size axes(std::max(1, static_cast<int>(short_side * rng.uniform(0.02, 0.12))),
                        std::max(1, static_cast<int>(short_side * rng.uniform(0.02, 0.12))));
    cv::ellipse(image, random_point(rng, image), axes, rng.uniform(0, 180), 0, 360,
                palette_colour(rng), cv::FILLED, cv::LINE_AA);
  }
}

cv::Scalar outline_colour(SplitMix64& rng, const cv::Scalar& fill) {
  const double luma = 0.114 * fill[0] + 0.587 * fill[1] + 0.299 * fill[2];
  return cv::Scalar::all(luma > 110 ? rng.uniform(0, 60) : rng.uniform(190, 255));
}

}  // namespace synth_canvas

namespace {

constexpr double kMinFaceFraction = 0.35;  // face diameter / shorter side
constexpr double kMaxFaceFraction = 0.70;
constexpr double kMaxRotationDegrees = 20.0;

// Face-local coordinates (units of the face radius, y down) mapped to pixels.
struct Frame {
  cv::Point2d centre;
  double radius = 1;
  double angle_degrees = 0;  // rotation of the whole figure
  cv::Point to_pixel(double x, double y) const {
    const double a = angle_degrees * synth_canvas::kPi / 180, c = std::cos(a), s = std::sin(a);
    return {static_cast<int>(std::lround(centre.x + radius * (c * x - s * y))),
            static_cast<int>(std::lround(centre.y + radius * (s * x + c * y)))};
  }
  cv::Size axes(double ax, double ay) const {
    return {std::max(1, static_cast<int>(radius * ax)), std::max(1, static_cast<int>(radius * ay))};
  }
};

// Colours and stroke of one figure, drawn from the shared palette.
struct Style {
  cv::Scalar face, ear, inner, eye, dark, outline;
  int stroke = 1;
};

void filled_ellipse(cv::Mat& image, const Frame& f, double x, double y, double ax, double ay,
                    double angle, const cv::Scalar& fill, const Style& style, bool outline) {
  const cv::Point centre = f.to_pixel(x, y);
  const cv::Size axes = f.axes(ax, ay);
  const double a = f.angle_degrees + angle;
  cv::ellipse(image, centre, axes, a, 0, 360, fill, cv::FILLED, cv::LINE_AA);
  if (outline)
    cv::ellipse(image, centre, axes, a, 0, 360, style.outline, style.stroke, cv::LINE_AA);
}

void filled_polygon(cv::Mat& image, const std::vector<cv::Point>& points, const cv::Scalar& fill,
                    const Style& style, bool outline) {
  cv::fillPoly(image, std::vector<std::vector<cv::Point>>{points}, fill, cv::LINE_AA);
  if (outline) cv::polylines(image, points, true, style.outline, style.stroke, cv::LINE_AA);
}

void draw_eyes_and_nose(cv::Mat& image, const Frame& f, SplitMix64& rng, const Style& s,
                        double nose_y) {
  const double eye_x = rng.uniform(0.3, 0.42), eye_y = rng.uniform(-0.2, -0.05);
  const double eye_size = rng.uniform(0.11, 0.17);
  for (const double side : {-1.0, 1.0}) {
    filled_ellipse(image, f, side * eye_x, eye_y, eye_size, eye_size * 1.2, 0, s.eye, s, true);
    filled_ellipse(image, f, side * eye_x, eye_y, eye_size * 0.45, eye_size * 0.8, 0, s.dark, s,
                   false);
  }
  const double nose = rng.uniform(0.1, 0.15);
  filled_polygon(
      image, {f.to_pixel(-nose, nose_y), f.to_pixel(nose, nose_y), f.to_pixel(0, nose_y + nose)},
      s.dark, s, false);
}

// Cat: round face, two pointed triangular ears on top, whiskers.
void draw_cat(cv::Mat& image, const Frame& f, SplitMix64& rng, const Style& s) {
  const double ax = rng.uniform(0.95, 1.1), ay = rng.uniform(0.85, 1.0);
  for (const double side : {-1.0, 1.0}) {
    const double a_in = rng.uniform(0.2, 0.4), a_out = rng.uniform(0.95, 1.2);
    const double a_tip = rng.uniform(0.5, 0.75), tip = rng.uniform(1.6, 1.9);
    const cv::Point2d base_in(side * std::sin(a_in) * ax, -std::cos(a_in) * ay * 0.9);
    const cv::Point2d base_out(side * std::sin(a_out) * ax, -std::cos(a_out) * ay * 0.9);
    const cv::Point2d apex(side * std::sin(a_tip) * tip, -std::cos(a_tip) * tip);
    filled_polygon(image,
                   {f.to_pixel(base_in.x, base_in.y), f.to_pixel(apex.x, apex.y),
                    f.to_pixel(base_out.x, base_out.y)},
                   s.ear, s, true);
    const cv::Point2d mid = (base_in + base_out + apex) / 3.0;
    auto inner = [&](const cv::Point2d& p) {
      const cv::Point2d q = mid + (p - mid) * 0.5;
      return f.to_pixel(q.x, q.y);
    };
    filled_polygon(image, {inner(base_in), inner(apex), inner(base_out)}, s.inner, s, false);
  }
  filled_ellipse(image, f, 0, 0, ax, ay, 0, s.face, s, true);
  draw_eyes_and_nose(image, f, rng, s, 0.15);
  for (const double side : {-1.0, 1.0}) {
    for (int k = 0; k < 3; ++k) {
      cv::line(image, f.to_pixel(side * 0.25, 0.35 + 0.08 * k),
               f.to_pixel(side * rng.uniform(1.15, 1.4), 0.15 + 0.2 * k + rng.uniform(-0.05, 0.05)),
               s.outline, std::max(1, s.stroke / 2), cv::LINE_AA);
    }
  }
}

// Dog: face with long rounded ears hanging down at the sides and a muzzle.
void draw_dog(cv::Mat& image, const Frame& f, SplitMix64& rng, const Style& s) {
  const double ax = rng.uniform(0.85, 0.95), ay = rng.uniform(0.95, 1.05);
  filled_ellipse(image, f, 0, 0, ax, ay, 0, s.face, s, true);
  const double ear_x = rng.uniform(0.85, 1.0), ear_y = rng.uniform(0.15, 0.35);
  const double ear_w = rng.uniform(0.25, 0.35), ear_h = rng.uniform(0.65, 0.85);
  const double ear_tilt = rng.uniform(5, 25);
  for (const double side : {-1.0, 1.0}) {
    filled_ellipse(image, f, side * ear_x, ear_y, ear_w, ear_h, -side * ear_tilt, s.ear, s, true);
  }
  draw_eyes_and_nose(image, f, rng, s, 0.15);
  filled_ellipse(image, f, 0, rng.uniform(0.45, 0.55), rng.uniform(0.38, 0.5),
                 rng.uniform(0.25, 0.32), 0, s.inner, s, true);
  filled_ellipse(image, f, 0, 0.32, rng.uniform(0.14, 0.2), rng.uniform(0.09, 0.13), 0, s.dark, s,
                 false);
}

// Bear: broad round face, two small round ears on top, a wide muzzle.
void draw_bear(cv::Mat& image, const Frame& f, SplitMix64& rng, const Style& s) {
  const double ax = rng.uniform(1.0, 1.12), ay = rng.uniform(0.88, 1.0);
  const double ear_x = rng.uniform(0.6, 0.8), ear_y = -rng.uniform(0.75, 0.9);
  const double ear_r = rng.uniform(0.26, 0.34);
  for (const double side : {-1.0, 1.0}) {
    filled_ellipse(image, f, side * ear_x, ear_y, ear_r, ear_r, 0, s.ear, s, true);
    filled_ellipse(image, f, side * ear_x, ear_y, ear_r * 0.5, ear_r * 0.5, 0, s.inner, s, false);
  }
  filled_ellipse(image, f, 0, 0, ax, ay, 0, s.face, s, true);
  draw_eyes_and_nose(image, f, rng, s, 0.15);
  filled_ellipse(image, f, 0, rng.uniform(0.4, 0.5), rng.uniform(0.42, 0.55),
                 rng.uniform(0.28, 0.35), 0, s.inner, s, true);
  filled_ellipse(image, f, 0, 0.3, rng.uniform(0.15, 0.2), rng.uniform(0.1, 0.13), 0, s.dark, s,
                 false);
}

// Rabbit: narrower face, two long upright ears on top, whiskers.
void draw_rabbit(cv::Mat& image, const Frame& f, SplitMix64& rng, const Style& s) {
  const double ax = rng.uniform(0.8, 0.92), ay = rng.uniform(0.92, 1.05);
  const double ear_x = rng.uniform(0.3, 0.45), ear_w = rng.uniform(0.18, 0.26);
  const double ear_h = rng.uniform(0.8, 1.05), ear_tilt = rng.uniform(0, 18);
  for (const double side : {-1.0, 1.0}) {
    const double ear_y = -ay - ear_h * 0.7;
    filled_ellipse(image, f, side * ear_x, ear_y, ear_w, ear_h, side * ear_tilt, s.ear, s, true);
    filled_ellipse(image, f, side * ear_x, ear_y, ear_w * 0.5, ear_h * 0.75, side * ear_tilt,
                   s.inner, s, false);
  }
  filled_ellipse(image, f, 0, 0, ax, ay, 0, s.face, s, true);
  draw_eyes_and_nose(image, f, rng, s, 0.15);
  for (const double side : {-1.0, 1.0}) {
    for (int k = 0; k < 2; ++k) {
      cv::line(image, f.to_pixel(side * 0.2, 0.35 + 0.1 * k),
               f.to_pixel(side * rng.uniform(1.0, 1.3), 0.2 + 0.25 * k + rng.uniform(-0.05, 0.05)),
               s.outline, std::max(1, s.stroke / 2), cv::LINE_AA);
    }
  }
}

Style draw_style(SplitMix64& rng, const cv::Scalar& background, double radius) {
  Style s;
  s.face = synth_canvas::contrasting_colour(rng, background, 110);
  s.ear = rng.bernoulli(0.6) ? s.face : synth_canvas::contrasting_colour(rng, background, 90);
  s.inner = synth_canvas::palette_colour(rng);
  s.eye = synth_canvas::palette_colour(rng);
  s.dark = cv::Scalar::all(rng.uniform(0, 50));
  s.outline = synth_canvas::outline_colour(rng, s.face);
  s.stroke = std::max(2, static_cast<int>(radius * rng.uniform(0.05, 0.09)));
  return s;
}

}  // namespace

cv::Mat draw_synthetic_image(std::uint64_t seed, bool second_class, const SynthOptions& o) {
  SplitMix64 rng(seed);
  const int width = rng.uniform_int(o.min_side, o.max_side);
  const int height = rng.uniform_int(o.min_side, o.max_side);
  cv::Mat image(height, width, CV_8UC3);
  const cv::Scalar background = synth_canvas::fill_background(image, rng);
  synth_canvas::draw_clutter(image, rng, 8, 8);
  const double short_side = std::min(width, height);
  Frame frame;
  frame.radius = 0.5 * short_side * rng.uniform(kMinFaceFraction, kMaxFaceFraction);
  frame.centre = {rng.uniform(frame.radius, width - frame.radius),
                  rng.uniform(std::min(1.5 * frame.radius, height - 1.05 * frame.radius),
                              height - 1.05 * frame.radius)};
  frame.angle_degrees = rng.uniform(-kMaxRotationDegrees, kMaxRotationDegrees);
  const Style style = draw_style(rng, background, frame.radius);
  if (o.task == "bears_rabbits") {
    (second_class ? draw_rabbit : draw_bear)(image, frame, rng, style);
  } else {
    (second_class ? draw_dog : draw_cat)(image, frame, rng, style);
  }
  synth_canvas::draw_clutter(image, rng, 2,
                             0);  // a few strokes in front, as real photos have occlusions
  return image;
}

}  // namespace ltfit
