// Layout folders: a folder per class. Three shapes (fastai's GrandparentSplitter with
// parent_label, or from_folder with valid_pct):
//   <root>/<train_folder>/<class>/* with <root>/<valid_folder>/<class>/*   split "folders"
//   <root>/<train_folder>/<class>/* alone: split by data.valid_pct          split "valid_pct"
//   <root>/<class>/* (a plain tree): split by data.valid_pct               split "valid_pct"
// In the split shapes every class folder must hold an image; in a plain tree, a subfolder with
// no image (fastai's models/, say) is left out and noted. Also index_class_folders, which
// evaluation uses. Pure functions, thread-safe.
#include <algorithm>
#include <filesystem>

#include "data/layouts.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/util/error.h"

namespace ltfit {
namespace {

namespace fs = std::filesystem;
using layouts::join_names;
using layouts::kDataHint;

// Samples of `dir`/<class>/* for each class; a missing or empty class folder is an error.
// `classes_from` names where the class list came from.
std::vector<Sample> folders_split_samples(const fs::path& dir,
                                          const std::vector<std::string>& classes,
                                          const fs::path& classes_from) {
  std::vector<Sample> samples;
  for (std::size_t label = 0; label < classes.size(); ++label) {
    const fs::path class_dir = dir / classes[label];
    if (!layouts::is_directory_at(class_dir)) {
      throw DataError("class folder '" + class_dir.string() + "' is missing (classes from " +
                          classes_from.string() + ": " + join_names(classes) + ")",
                      "every split needs the same class folders; " + std::string(kDataHint));
    }
    const auto files = layouts::image_files_in(class_dir);
    if (files.empty()) {
      throw DataError("class folder '" + class_dir.string() + "' holds no images (looked for " +
                          "*.jpg, *.jpeg, *.png, *.bmp, *.webp, *.tif, *.tiff)",
                      "add images or remove the folder; " + std::string(kDataHint));
    }
    for (const auto& file : files) samples.push_back({file, static_cast<std::int64_t>(label)});
  }
  return samples;
}

std::vector<std::string> folders_classes_of(const fs::path& dir) {
  const auto classes = layouts::visible_subdirectories(dir);
  if (classes.empty()) {
    throw DataError("no class folders in '" + dir.string() + "' (layout folders)", kDataHint);
  }
  return classes;
}

// `samples` (sorted by path) split by data.valid_pct into `index`.
void folders_random_split(DatasetIndex& index, const std::vector<Sample>& samples,
                          const DataConfig& data, std::uint64_t seed, const fs::path& from) {
  const auto split = layouts::random_split(samples.size(), data.valid_pct, seed,
                                           "'" + from.string() + "' (layout folders)");
  for (const std::size_t i : split.train) index.train.push_back(samples[i]);
  for (const std::size_t i : split.valid) index.valid.push_back(samples[i]);
  index.split = "valid_pct";
}

DatasetIndex folders_with_train_folder(const DataConfig& data, std::uint64_t seed) {
  const fs::path root(data.root);
  const fs::path train = root / data.train_folder;
  const fs::path valid = root / data.valid_folder;
  DatasetIndex index;
  index.layout = data_layout_name(DataLayout::kFolders);
  index.classes = folders_classes_of(train);
  auto train_samples = folders_split_samples(train, index.classes, train);
  if (!layouts::is_directory_at(valid)) {
    layouts::sort_samples_by_path(train_samples);
    folders_random_split(index, train_samples, data, seed, train);
    return index;
  }
  for (const auto& name : layouts::visible_subdirectories(valid)) {
    if (!std::binary_search(index.classes.begin(), index.classes.end(), name)) {
      throw DataError("class folder '" + (valid / name).string() + "' has no counterpart in '" +
                          train.string() + "'",
                      "train and valid need the same class folders");
    }
  }
  index.train = std::move(train_samples);
  index.valid = folders_split_samples(valid, index.classes, train);
  index.split = "folders";
  return index;
}

// <root>/<class>/*: class folders without an image are left out (and noted).
DatasetIndex folders_plain_tree(const DataConfig& data, std::uint64_t seed) {
  const fs::path root(data.root);
  DatasetIndex index;
  index.layout = data_layout_name(DataLayout::kFolders);
  layouts::NoteTally empty("subfolder(s) of the data root without images, left out");
  for (const auto& name : folders_classes_of(root)) {
    if (layouts::image_files_in(root / name).empty()) {
      empty.add("'" + (root / name).string() + "'");
    } else {
      index.classes.push_back(name);
    }
  }
  empty.append_to(index.notes);
  if (index.classes.empty()) {
    throw DataError("no subfolder of '" + root.string() + "' holds images (layout folders: " +
                        (root / "<class>" / "*.jpg").string() + ")",
                    kDataHint);
  }
  auto samples = folders_split_samples(root, index.classes, root);
  layouts::sort_samples_by_path(samples);
  folders_random_split(index, samples, data, seed, root);
  return index;
}

}  // namespace

namespace layouts {

bool has_split_class_folders(const fs::path& root, const std::string& train_folder) {
  for (const auto& name : visible_subdirectories(root / train_folder)) {
    if (!image_files_in(root / train_folder / name).empty()) return true;
  }
  return false;
}

bool has_plain_class_folders(const fs::path& root) {
  for (const auto& name : visible_subdirectories(root)) {
    if (!image_files_in(root / name).empty()) return true;
  }
  return false;
}

DatasetIndex index_folders_layout(const DataConfig& data, std::uint64_t seed) {
  const fs::path root(data.root);
  if (is_directory_at(root / data.train_folder)) return folders_with_train_folder(data, seed);
  if (!visible_subdirectories(root / data.valid_folder).empty()) {
    throw DataError("'" + (root / data.valid_folder).string() + "' holds class folders but '" +
                        (root / data.train_folder).string() +
                        "' does not exist (layout folders, data.train_folder)",
                    "set data.train_folder to the training split's folder");
  }
  return folders_plain_tree(data, seed);
}

}  // namespace layouts

std::vector<Sample> index_class_folders(const std::string& dir,
                                        const std::vector<std::string>& classes) {
  const fs::path root(dir);
  if (!layouts::is_directory_at(root)) {
    throw DataError("data folder '" + dir + "' does not exist (looked for " +
                        (root / "<class>" / "*.jpg").string() + " with classes " +
                        join_names(classes) + ")",
                    kDataHint);
  }
  for (const auto& name : layouts::visible_subdirectories(root)) {
    if (std::find(classes.begin(), classes.end(), name) == classes.end()) {
      throw DataError("folder '" + (root / name).string() +
                          "' is not one of the model's classes (" + join_names(classes) + ")",
                      "name the class folders as in training, or remove the extra folder");
    }
  }
  std::vector<std::string> missing;
  for (const auto& name : classes) {
    if (!layouts::is_directory_at(root / name)) missing.push_back(name);
  }
  // A test set may lack some classes: those are evaluated with support 0 (the caller says so).
  if (missing.size() == classes.size()) {
    throw DataError("no class folder of the model's classes in '" + dir + "'",
                    "evaluation needs one folder per class (" + join_names(classes) +
                        "), or a dataset root holding train/ valid/ (test/) with such folders, "
                        "or Kaggle's flat <class>.<N>.jpg files");
  }
  std::vector<Sample> samples;
  for (std::size_t label = 0; label < classes.size(); ++label) {
    if (!layouts::is_directory_at(root / classes[label])) continue;
    for (const auto& file : layouts::image_files_in(root / classes[label])) {
      samples.push_back({file, static_cast<std::int64_t>(label)});
    }
  }
  if (samples.empty()) {
    throw DataError("no images in the class folders of '" + dir + "'", kDataHint);
  }
  layouts::sort_samples_by_path(samples);
  return samples;
}

}  // namespace ltfit
