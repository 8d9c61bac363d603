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

// True for file names with an image extension we decode (jpg, jpeg, png, bmp, webp, tif, tiff).
bool has_image_extension(const std::string& path);

}  // namespace ltfit
