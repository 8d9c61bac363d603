// Finding the images of a dataset and their labels, in either supported layout.
//
//   folders: <root>/train/<class>/*.jpg and <root>/valid/<class>/*.jpg
//   kaggle:  <root>/cat.N.jpg (or <root>/train/cat.N.jpg): the class is the name's prefix; a
//            validation split of `valid_count` images is drawn deterministically from `seed`.
// File order is sorted, so the index is the same on every machine. Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ltfit/config/config.h"

namespace ltfit {

struct Sample {
  std::string path;    // image file
  std::int64_t label;  // index into DatasetIndex::classes
};

struct DatasetIndex {
  std::string layout;                // resolved layout: folders | kaggle
  std::vector<std::string> classes;  // sorted class names
  std::vector<Sample> train;         // training samples, sorted by path
  std::vector<Sample> valid;         // validation samples, sorted by path
};

// Indexes `data.root` per `data.layout`. Throws DataError (exit 3) naming what was looked for
// when the root is missing, a class folder is empty, or no image is found.
DatasetIndex index_dataset(const DataConfig& data, std::uint64_t seed);

// Indexes one folder of class subfolders (<dir>/<class>/*) against known `classes`.
std::vector<Sample> index_class_folders(const std::string& dir,
                                        const std::vector<std::string>& classes);

// What `ltfit evaluate --data DIR [--split S]` evaluates: the images and where they come from.
struct EvalDataSet {
  std::vector<Sample> samples;  // sorted by path; labels index the model's classes
  std::string folder;           // where the images are: DIR, DIR/<split>, or the Kaggle folder
  std::string split;            // train | valid | test; empty at a class-folder level
  std::string layout;           // "class folders" | folders | kaggle
};

// Indexes `dir` for evaluating a model of `classes`. `dir` is either a class-folder level
// (<dir>/<class>/*, as index_class_folders) or a dataset root: train/ valid/ (test/) folders of
// class folders (layout folders), or Kaggle's flat <class>.<N>.jpg files (in `dir` or
// `dir`/train), whose train and valid splits are drawn as training drew them (`valid_count`,
// `seed`). A root is recognized when none of its subfolders is one of `classes`. `split` picks
// the root's split (empty: valid). DataError (exit 3) when the split does not exist (naming the
// splits that do) or the images do not match `classes`; ConfigError (exit 2) for a `split` given
// with a class-folder level.
EvalDataSet index_eval_data(const std::string& dir, const std::vector<std::string>& classes,
                            const std::string& split, int valid_count, std::uint64_t seed);

// True for file names with an image extension we decode (jpg, jpeg, png, bmp, webp, tif, tiff).
bool has_image_extension(const std::string& path);

}  // namespace ltfit
