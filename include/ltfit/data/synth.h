// A synthetic JPEG image set: two-class "cats vs dogs" shaped like the real one, or multi-label.
//
// Both classes are drawn from the same colour palettes and the same background clutter; they
// differ only in shape (a "cat" face has pointed triangular ears on top, a "dog" face has long
// rounded ears hanging at the sides and a muzzle), so a model has to learn shapes, not colour
// statistics. A second task, `bears_rabbits`, draws the same faces, eyes and palettes with other
// ears (small round ones on top vs long upright ones): a different classification problem over
// shared low-level features, for transfer-learning checks without downloaded weights. A third,
// multi-label task, `shapes`, draws over the same cluttered backgrounds a random subset of four
// shapes (circle, square, triangle, star; each present with probability 0.5, so a few images hold
// none), in the same palette whatever the shape. Sizes are about 300-500 px a side with varied
// aspect ratios, JPEG quality ~75. Output is a pure function of (options.seed, split, index in
// split): the same seed gives byte-identical files, and an image is the same in every layout.
// Thread-safe: no shared state.
//
// Layouts (what ltfit's data.layout of the same name reads):
//   folders: {train,valid}/<class>/NNNNN.jpg
//   kaggle:  train/<class>.<N>.jpg, both splits in one pool (N counts per class from 0)
//   csv:     images/NNNNN.jpg (training images first, then validation ones) and labels.csv with
//            the header `fname,labels,is_valid`: the path relative to out_dir, the class name or
//            the shapes' names joined by spaces (possibly none), True for validation rows else
//            False (fastai's Planet/PASCAL CSVs: data.csv.valid_column's default, is_valid,
//            reads the split); for shapes also labels.csv.json (csv_sidecar.h), which gives
//            data.csv.label_delim " ", so a plain config trains them multi-label. Written after
//            the images.
//   pattern: images/<class>_<N>.jpg, both splits in one pool, matching the default
//            data.label_pattern `^(.+)_\d+\.jpg$` (the split is then data.valid_pct's).
//   cifar10:  cifar-10-batches-bin/ with data_batch_1.bin to data_batch_5.bin (the training
//             images spread over them), test_batch.bin (the validation ones) and
//             batches.meta.txt (the task's two class names): CIFAR's binary records, each image
//             shrunk to 32×32 (area averaging), no image files.
//   cifar100: cifar-100-binary/ with train.bin, test.bin, fine_label_names.txt (the task's
//             classes) and coarse_label_names.txt (one superclass per class).
// The shapes task needs the csv layout: no other holds a set of labels per image.
#pragma once

#include <cstdint>
#include <string>

namespace ltfit {

struct SynthOptions {
  std::string out_dir;  // destination root (created if missing)
  int train = 1000;     // training images, split evenly between the classes (of two-class tasks)
  int valid = 200;      // validation images, split evenly between the classes (of two-class tasks)
  std::string layout = "folders";  // folders | kaggle | csv | pattern | cifar10 | cifar100
  // cats_dogs (cat, dog) | bears_rabbits (bear, rabbit) | shapes (multi-label; csv layout only)
  std::string task = "cats_dogs";
  std::uint64_t seed = 0;  // drives every random choice
  int jpeg_quality = 75;   // OpenCV JPEG quality, 0-100
  int min_side = 300;      // smallest image side, pixels
  int max_side = 500;      // largest image side, pixels
};

struct SynthResult {
  int train_written = 0;  // images written for training (kaggle, pattern: all images)
  int valid_written = 0;  // images written for validation (kaggle, pattern: 0, split at training)
};

// Writes the image set. Throws ConfigError (exit 2) for bad options (an unknown layout or task,
// the shapes task without the csv layout, ...), DataError if the directory cannot be created,
// WriteError if a file cannot be written.
SynthResult write_synthetic_dataset(const SynthOptions& options);

}  // namespace ltfit
