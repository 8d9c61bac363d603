// Drawing one image of the multi-label `shapes` task (synth_draw.h): the faces' cluttered
// background, then circles, squares, triangles and stars, each present or not by
// synth_shape_mask.
//
// What makes the task learnable yet not trivial: every shape is at least about a quarter of the
// shorter side across and nearly upright, filled with a colour that contrasts with the
// background and outlined (the clutter blobs behind are smaller and never outlined), and shapes
// overlap only partly, so each one stays recognizable; but colours come from the one palette
// whatever the shape, the clutter holds ellipses and lines, and shapes may cover parts of each
// other. (A small CNN at 64 px reached ~0.75 per-label validation accuracy after 8 epochs on 400
// images and ~0.87 after 20; the two-class faces are far easier.) Thread-safe.
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "data/synth_draw.h"
#include "ltfit/util/random.h"

namespace ltfit {
namespace {

constexpr std::uint64_t kShapeMaskStream = 0x5348415045530001ULL;  // mix_seed tag of the mask
constexpr double kShapePresentProbability = 0.5;
constexpr double kShapeMinFraction = 0.30;  // size / shorter side (before kShapeKindScale)
constexpr double kShapeMaxFraction = 0.46;
// Outer diameter / size per kind, so that the thinner shapes are not much smaller to the eye.
constexpr std::array<double, 4> kShapeKindScale = {0.85, 1.05, 1.15, 1.15};
// Centres at least this × (sum of the outer radii) apart: shapes may overlap, but none hides
// another. The best of kShapePlacementTries candidates when none fits.
constexpr double kShapeMinSpacing = 0.65;
constexpr int kShapePlacementTries = 24;
// Rotation in ±this many degrees from upright (a square stands on an edge, a triangle and a star
// on two corners): little enough that a square never turns into a diamond.
constexpr double kShapeMaxRotationDegrees = 25.0;
constexpr double kStarInnerRatio = 0.45;  // inner / outer radius of the five-pointed star

enum ShapeKind { kCircleShape = 0, kSquareShape, kTriangleShape, kStarShape };

// One shape: which, where, and its outer (circumscribed) radius and rotation.
struct PlacedShape {
  int kind = kCircleShape;
  cv::Point2d centre;
  double radius = 1;
  double angle = 0;  // radians
};

// `corners` points on the circle of `shape.radius` around `shape.centre`, the first at
// `shape.angle` clockwise from straight up, alternating with points at `inner_ratio` × radius
// when that is below 1 (a star).
std::vector<cv::Point> shape_polygon(const PlacedShape& shape, int corners, double inner_ratio) {
  const bool star = inner_ratio < 1;
  const int points = star ? 2 * corners : corners;
  std::vector<cv::Point> polygon;
  for (int i = 0; i < points; ++i) {
    const double r = star && i % 2 == 1 ? shape.radius * inner_ratio : shape.radius;
    const double a = shape.angle + 2 * synth_canvas::kPi * i / points;
    polygon.emplace_back(static_cast<int>(std::lround(shape.centre.x + r * std::sin(a))),
                         static_cast<int>(std::lround(shape.centre.y - r * std::cos(a))));
  }
  return polygon;
}

void draw_placed_shape(cv::Mat& image, const PlacedShape& shape, const cv::Scalar& fill,
                       const cv::Scalar& outline, int stroke) {
  if (shape.kind == kCircleShape) {
    const cv::Point centre(static_cast<int>(std::lround(shape.centre.x)),
                           static_cast<int>(std::lround(shape.centre.y)));
    const int radius = std::max(1, static_cast<int>(std::lround(shape.radius)));
    cv::circle(image, centre, radius, fill, cv::FILLED, cv::LINE_AA);
    cv::circle(image, centre, radius, outline, stroke, cv::LINE_AA);
    return;
  }
  PlacedShape square = shape;
  square.angle += synth_canvas::kPi / 4;  // first corner top right: standing on an edge
  const std::vector<cv::Point> polygon = shape.kind == kSquareShape ? shape_polygon(square, 4, 1)
                                         : shape.kind == kTriangleShape
                                             ? shape_polygon(shape, 3, 1)
                                             : shape_polygon(shape, 5, kStarInnerRatio);
  cv::fillPoly(image, std::vector<std::vector<cv::Point>>{polygon}, fill, cv::LINE_AA);
  cv::polylines(image, polygon, true, outline, stroke, cv::LINE_AA);
}

// The smallest centre distance to a placed shape over the sum of the two radii (large when
// none is placed).
double spacing_ratio(const PlacedShape& candidate, const std::vector<PlacedShape>& placed) {
  double ratio = 1e9;
  for (const auto& other : placed) {
    const cv::Point2d d = candidate.centre - other.centre;
    ratio = std::min(ratio, std::hypot(d.x, d.y) / (candidate.radius + other.radius));
  }
  return ratio;
}

// A place for a shape of `kind` inside the image, away from the `placed` ones if it can be.
PlacedShape place_shape(int kind, const cv::Size& size, const std::vector<PlacedShape>& placed,
                        SplitMix64& rng) {
  const double short_side = std::min(size.width, size.height);
  PlacedShape best;
  best.kind = kind;
  best.radius = 0.5 * short_side * rng.uniform(kShapeMinFraction, kShapeMaxFraction) *
                kShapeKindScale[static_cast<size_t>(kind)];
  best.angle =
      rng.uniform(-kShapeMaxRotationDegrees, kShapeMaxRotationDegrees) * synth_canvas::kPi / 180;
  double best_ratio = -1;
  for (int attempt = 0; attempt < kShapePlacementTries && best_ratio < kShapeMinSpacing;
       ++attempt) {
    PlacedShape candidate = best;
    candidate.centre = {rng.uniform(best.radius, size.width - best.radius),
                        rng.uniform(best.radius, size.height - best.radius)};
    const double ratio = spacing_ratio(candidate, placed);
    if (ratio > best_ratio) {
      best = candidate;
      best_ratio = ratio;
    }
  }
  return best;
}

}  // namespace

unsigned synth_shape_mask(std::uint64_t seed) {
  SplitMix64 rng(mix_seed(seed, kShapeMaskStream));
  unsigned mask = 0;
  for (size_t i = 0; i < kSynthShapeNames.size(); ++i) {
    if (rng.bernoulli(kShapePresentProbability)) mask |= 1u << i;
  }
  return mask;
}

cv::Mat draw_synthetic_shapes(std::uint64_t seed, const SynthOptions& o) {
  SplitMix64 rng(seed);
  const int width = rng.uniform_int(o.min_side, o.max_side);
  const int height = rng.uniform_int(o.min_side, o.max_side);
  cv::Mat image(height, width, CV_8UC3);
  const cv::Scalar background = synth_canvas::fill_background(image, rng);
  synth_canvas::draw_clutter(image, rng, 8, 8);
  std::vector<int> kinds;
  const unsigned mask = synth_shape_mask(seed);
  for (int k = 0; k < static_cast<int>(kSynthShapeNames.size()); ++k) {
    if (mask & (1u << k)) kinds.push_back(k);
  }
  for (size_t i = kinds.size(); i > 1; --i) {  // random drawing order: no shape always on top
    std::swap(kinds[i - 1], kinds[static_cast<size_t>(rng.below(i))]);
  }
  std::vector<PlacedShape> placed;
  for (const int kind : kinds) {
    placed.push_back(place_shape(kind, image.size(), placed, rng));
    const cv::Scalar fill = synth_canvas::contrasting_colour(rng, background, 110);
    const cv::Scalar outline = synth_canvas::outline_colour(rng, fill);
    const int stroke =
        std::max(2, static_cast<int>(placed.back().radius * rng.uniform(0.04, 0.08)));
    draw_placed_shape(image, placed.back(), fill, outline, stroke);
  }
  synth_canvas::draw_clutter(image, rng, 2, 0);  // a few strokes in front, as for the faces
  return image;
}

}  // namespace ltfit
