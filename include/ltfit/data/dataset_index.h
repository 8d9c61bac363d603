// Finding the images of a dataset and their labels, in one of the layouts of `data.layout`:
//
//   folders: <root>/train/<class>/* with <root>/valid/<class>/* (data.train_folder,
//            data.valid_folder); without the valid folder, the train folder split by
//            data.valid_pct; or a plain tree <root>/<class>/* split by data.valid_pct.
//   kaggle:  <root>/cat.N.jpg (or <root>/train/cat.N.jpg): the class is the name's prefix; a
//            validation split of `valid_count` images is drawn deterministically from `seed`.
//   csv:     data.csv names each image and its label (or label set); validation rows marked by a
//            column or split by data.valid_pct (fastai's ImageDataLoaders.from_csv).
//   pattern: every image under the root, labelled by data.label_pattern's first group on the
//            file name (fastai's from_name_re), split by data.valid_pct.
//   cifar10, cifar100: CIFAR's binary batch files; the images are records held in memory
//            (Sample::image), named "<file>#<record>"; the test batch validates.
// The data.valid_pct split is fastai's RandomSplitter(valid_pct, seed) on the sorted paths, so
// the index is the same on every machine, rank and resume. Each layout lives in its own file
// (src/data/layout_*.cpp). Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ltfit/config/config.h"
#include "ltfit/data/sample.h"  // Sample

namespace ltfit {

struct DatasetIndex {
  std::string layout;  // resolved layout: folders | kaggle | csv | pattern | cifar10 | cifar100
  std::vector<std::string> classes;  // sorted class names (multi-label: every label seen)
  bool multi_label = false;          // samples carry label sets
  std::vector<Sample> train;         // training samples, sorted by path
  std::vector<Sample> valid;         // validation samples, sorted by path
  std::string split;  // how valid was chosen: folders | valid_column | valid_pct | valid_count
  // What was left out or looks wrong (rows skipped, names unmatched, classes only in
  // validation), each counted and naming a few examples; the caller logs them.
  std::vector<std::string> notes;
};

// Indexes `data.root` per `data.layout` (auto: csv when data.csv.file exists under the root,
// folders when class folders exist, else kaggle). `multi_label` (is_multi_label(config)) makes
// every sample a label set. Throws DataError (exit 3) naming what was looked for when the root is
// missing, a class folder is empty, no image is found, a CSV row's path leaves the root, no row
// is usable, or a split would be empty; ConfigError (exit 2) for a bad data.label_pattern or a
// data.csv column that does not exist.
DatasetIndex index_dataset(const DataConfig& data, std::uint64_t seed, bool multi_label);

// The text of a run directory's split.csv: header `path,split,labels`, then one row per sample
// sorted by path: its path relative to `root`, train | valid, and its class names joined by
// spaces. Fields quoted per RFC 4180 where needed.
std::string split_csv(const DatasetIndex& index, const std::string& root);

// Indexes one folder of class subfolders (<dir>/<class>/*) against known `classes`. A class
// without a folder has no samples (a test set may lack some); DataError when none of the
// classes has a folder, or a folder is not one of them.
std::vector<Sample> index_class_folders(const std::string& dir,
                                        const std::vector<std::string>& classes);

// What `ltfit evaluate --data DIR [--split S]` evaluates: the images and where they come from.
struct EvalDataSet {
  std::vector<Sample> samples;  // sorted by path; labels index the model's classes
  std::string folder;           // where the images are: DIR, DIR/<split>, or the Kaggle folder
  std::string split;            // train | valid | test; empty at a class-folder level
  std::string layout;           // "class folders" | folders | kaggle | cifar10 | cifar100
};

// Indexes `dir` for evaluating a model of `classes`. `dir` is either a class-folder level
// (<dir>/<class>/*, as index_class_folders) or a dataset root: train/ valid/ (test/) folders of
// class folders (layout folders), or Kaggle's flat <class>.<N>.jpg files (in `dir` or
// `dir`/train), whose train and valid splits are drawn as training drew them (`data`'s
// valid_count or valid_pct, and `seed`), or CIFAR's batches (cifar10, cifar100: train is the
// training batches, valid and test the test batch; data.cifar_label picks CIFAR-100's label). A
// root is recognized when none of its subfolders is one of `classes`. `split` picks the root's
// split (empty: valid). DataError (exit 3) when the split does not exist (naming the splits that
// do) or the images do not match `classes`; ConfigError (exit 2) for a `split` given with a
// class-folder level.
EvalDataSet index_eval_data(const std::string& dir, const std::vector<std::string>& classes,
                            const std::string& split, const DataConfig& data, std::uint64_t seed);

// True for file names with an image extension we decode (jpg, jpeg, png, bmp, webp, tif, tiff).
bool has_image_extension(const std::string& path);

}  // namespace ltfit
