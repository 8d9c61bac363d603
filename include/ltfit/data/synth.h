// A synthetic two-class "cats vs dogs" JPEG image set shaped like the real one.
//
// Both classes are drawn from the same colour palettes and the same background clutter; they
// differ only in shape (a "cat" face has pointed triangular ears on top, a "dog" face has long
// rounded ears hanging at the sides and a muzzle), so a model has to learn shapes, not colour
// statistics. A second task, `bears_rabbits`, draws the same faces, eyes and palettes with other
// ears (small round ones on top vs long upright ones): a different classification problem over
// shared low-level features, for transfer-learning checks without downloaded weights. Sizes are
// about 300-500 px a side with varied aspect ratios, JPEG quality ~75. Output is a pure function of
// (options.seed, image index): the same seed gives byte-identical files. Thread-safe: no shared
// state.
#pragma once

#include <cstdint>
#include <string>

namespace ltfit {

struct SynthOptions {
  std::string out_dir;  // destination root (created if missing)
  int train = 1000;     // training images, split evenly between the classes
  int valid = 200;      // validation images, split evenly between the classes
  std::string layout =
      "folders";  // folders: {train,valid}/{cat,dog}/N.jpg | kaggle: train/cat.N.jpg
  std::string task = "cats_dogs";  // cats_dogs (cat, dog) | bears_rabbits (bear, rabbit)
  std::uint64_t seed = 0;          // drives every random choice
  int jpeg_quality = 75;           // OpenCV JPEG quality, 0-100
  int min_side = 300;              // smallest image side, pixels
  int max_side = 500;              // largest image side, pixels
};

struct SynthResult {
  int train_written = 0;  // images written for training (kaggle: all images)
  int valid_written = 0;  // images written for validation (kaggle: 0, the split is by seed)
};

// Writes the image set; throws DataError if the directory cannot be written.
SynthResult write_synthetic_dataset(const SynthOptions& options);

}  // namespace ltfit
