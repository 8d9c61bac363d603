// Drawing one synthetic image (private to src/data; synth.h describes the set): a cluttered
// gradient background, then either a face of the task's first or second class in colours from a
// palette both classes share (synth_draw.cpp), or a random subset of four shapes for the
// multi-label `shapes` task (synth_shapes.cpp), then a few strokes in front. A pure function of
// its seed: every random choice comes from one SplitMix64. Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include <opencv2/core.hpp>

#include "ltfit/data/synth.h"

namespace ltfit {

class SplitMix64;

// A [H,W] CV_8UC3 BGR image with sides in [options.min_side, options.max_side]: a cat or bear
// (`second_class` false) or a dog or rabbit (true), as options.task says.
cv::Mat draw_synthetic_image(std::uint64_t seed, bool second_class, const SynthOptions& options);

// ---- the cifar10 and cifar100 layouts (synth_cifar.cpp) -------------------------------------

// One drawn image as a CIFAR record: its class (0: the task's first, 1: its second) and its
// pixels as cifar_planes gives them.
struct CifarSynthImage {
  int label = 0;
  std::string planes;  // 3,072 bytes: the R, G and B planes of 32×32
};

// `image` (CV_8UC3 BGR, any size) shrunk to 32×32 with area averaging, as its R, G, B planes.
std::string cifar_planes(const cv::Mat& image);

// Writes the layout's batch folder under options.out_dir (cifar-10-batches-bin: training images
// spread over data_batch_1.bin to data_batch_5.bin, test_batch.bin, batches.meta.txt;
// cifar-100-binary: train.bin, test.bin, fine_label_names.txt and coarse_label_names.txt, the
// task's classes as fine labels and a coarse name for each), each file written atomically.
void write_cifar_batches(const SynthOptions& options, const std::array<const char*, 2>& classes,
                         const std::vector<CifarSynthImage>& train,
                         const std::vector<CifarSynthImage>& test);

// ---- the shards layout (synth_shards.cpp) ----------------------------------------------------

// One encoded image as a shard sample: its class (0 or 1) and its JPEG bytes.
struct ShardSynthImage {
  int label = 0;
  std::string jpeg;
};

// Writes train-000000.tar, ... (at most kSynthShardSamples samples each) and valid-000000.tar, ...
// under options.out_dir, each sample NNNNNN.jpg with NNNNNN.cls (its class number), and
// classes.txt naming the numbers; each file written atomically.
inline constexpr std::size_t kSynthShardSamples = 1000;
void write_shards(const SynthOptions& options, const std::array<const char*, 2>& classes,
                  const std::vector<ShardSynthImage>& train,
                  const std::vector<ShardSynthImage>& valid);

// ---- the multi-label `shapes` task ------------------------------------------------------------

// The shapes task's labels; bit i of a shape mask stands for kSynthShapeNames[i].
inline constexpr std::array<const char*, 4> kSynthShapeNames = {"circle", "square", "triangle",
                                                                "star"};

// Which shapes the image of `seed` holds: each bit set independently with probability 0.5 (so
// 1/16 of the images hold none). Drawn from its own stream of `seed`, so that the label set is
// known without drawing the image.
unsigned synth_shape_mask(std::uint64_t seed);

// A [H,W] CV_8UC3 BGR image like draw_synthetic_image's, with the shapes of
// synth_shape_mask(seed) instead of a face: each at its own random place, size (outer diameter
// about 25-53% of the shorter side), rotation (within 25 degrees of upright) and colour,
// overlapping others at most partly.
cv::Mat draw_synthetic_shapes(std::uint64_t seed, const SynthOptions& options);

// ---- what the faces and the shapes share ------------------------------------------------------
namespace synth_canvas {

inline constexpr double kPi = 3.14159265358979323846;

// A palette colour (fur-like tones and a few background colours) with per-channel jitter, as
// an OpenCV BGR scalar.
cv::Scalar palette_colour(SplitMix64& rng);
// A palette colour at least `min_distance` (Euclidean, 0-255 per channel) from `avoid`, the
// best of a few tries.
cv::Scalar contrasting_colour(SplitMix64& rng, const cv::Scalar& avoid, double min_distance);
// Fills `image` with a linear gradient between two palette colours plus per-pixel noise.
// Returns the mean colour.
cv::Scalar fill_background(cv::Mat& image, SplitMix64& rng);
// Up to `max_lines` lines and `max_blobs` filled ellipses of palette colours.
void draw_clutter(cv::Mat& image, SplitMix64& rng, int max_lines, int max_blobs);
// A dark outline on a light fill, a light one on a dark fill.
cv::Scalar outline_colour(SplitMix64& rng, const cv::Scalar& fill);

}  // namespace synth_canvas
}  // namespace ltfit
