// Drawing one synthetic image (private to src/data; synth.h describes the set): a cluttered
// gradient background, then a face of the task's first or second class in colours from a palette
// both classes share, then a few strokes in front. A pure function of its seed: every random
// choice comes from one SplitMix64. Thread-safe.
#pragma once

#include <cstdint>

#include <opencv2/core.hpp>

#include "ltfit/data/synth.h"

namespace ltfit {

// A [H,W] CV_8UC3 BGR image with sides in [options.min_side, options.max_side]: a cat or bear
// (`second_class` false) or a dog or rabbit (true), as options.task says.
cv::Mat draw_synthetic_image(std::uint64_t seed, bool second_class, const SynthOptions& options);

}  // namespace ltfit
