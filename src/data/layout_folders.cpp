// Layout folders: a folder per class. Three shapes (fastai's GrandparentSplitter with
// parent_label, or from_folder with valid_pct):
//   <root>/<train_folder>/<class>/* with <root>/<valid_folder>/<class>/*   split "folders"
//   <root>/<train_folder>/<class>/* alone: split by data.valid_pct          split "valid_pct"
//   <root>/<class>/* (a plain tree): split by data.valid_pct               split "valid_pct"
// The classes are the class folders of either split that hold an image; a folder without one
// (fastai's models/, say) is left out and noted, and a class only one split has is noted by
// index_dataset, as in every layout. Also index_class_folders, which
// evaluation uses. Pure functions, thread-safe.
#include <algorithm>
#include <filesystem>
#include <set>

#include "data/layouts.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/util/error.h"

namespace ltfit {
namespace {

namespace fs = std::filesystem;
using layouts::join_names;
using layouts::kDataHint;

// The class folders of `dirs` (the sorted union of their visible subfolders), each listed once:
// those holding an image in any of the dirs are the classes, the others are left out and noted;
// per dir, its samples of those classes (a class folder a dir lacks, or holds no image in, gives
// none there: index_dataset notes classes with no training or no validation image).
struct ClassFolders {
  std::vector<std::string> classes;
  std::vector<std::vector<Sample>> samples;  // one list per dir, class by class
};
ClassFolders folders_by_class(const std::vector<fs::path>& dirs, DatasetIndex& index) {
  std::set<std::string> names;
  for (const fs::path& dir : dirs)
    for (const auto& name : layouts::visible_subdirectories(dir)) names.insert(name);
  layouts::NoteTally empty("class folder(s) without images, left out");
  ClassFolders out;
  out.samples.resize(dirs.size());
  for (const std::string& name : names) {
    std::vector<std::vector<std::string>> files;
    for (const fs::path& dir : dirs) files.push_back(layouts::image_files_in(dir / name));
    if (std::all_of(files.begin(), files.end(), [](const auto& f) { return f.empty(); })) {
      for (const fs::path& dir : dirs)
        if (layouts::is_directory_at(dir / name)) empty.add("'" + (dir / name).string() + "'");
      continue;
    }
    const auto label = static_cast<std::int64_t>(out.classes.size());
    out.classes.push_back(name);
    for (std::size_t d = 0; d < dirs.size(); ++d)
      for (const auto& file : files[d]) out.samples[d].push_back({file, label});
  }
  empty.append_to(index.notes);
  if (out.classes.empty()) {
    throw DataError(
        "no class folder under '" + dirs.front().string() +
            "' holds images (layout folders: " + (dirs.front() / "<class>" / "*.jpg").string() +
            "; looked for *.jpg, *.jpeg, *.png, *.bmp, *.webp, *.tif, *.tiff)",
        kDataHint);
  }
  return out;
}

// The hint of a folders layout that found no class folders under `root`: the layout that fits
// the files that are there, when one does.
std::string folders_hint(const fs::path& root) {
  if (!layouts::kaggle_folder(root).empty()) {
    return "the files are named like Kaggle's <class>.<N>.jpg: set data.layout: kaggle (or auto)";
  }
  if (layouts::is_directory_at(root) && !layouts::image_files_in(root).empty()) {
    return "images lie flat in '" + root.string() +
           "': if the label is in the file name, set data.layout: pattern and "
           "data.label_pattern (docs/labels.md)";
  }
  return kDataHint;
}

std::vector<std::string> folders_classes_of(const fs::path& dir, const fs::path& root) {
  const auto classes = layouts::visible_subdirectories(dir);
  if (classes.empty()) {
    throw DataError("no class folders in '" + dir.string() + "' (layout folders)",
                    folders_hint(root));
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
  folders_classes_of(train, root);  // an error when it has no class folder at all
  if (!layouts::is_directory_at(valid)) {
    ClassFolders found = folders_by_class({train}, index);
    index.classes = std::move(found.classes);
    layouts::sort_samples_by_path(found.samples[0]);
    folders_random_split(index, found.samples[0], data, seed, train);
    return index;
  }
  // The classes are the folders of either split; a class only one split has is noted by
  // index_dataset (never trained on, or never validated), as every layout notes it.
  ClassFolders found = folders_by_class({train, valid}, index);
  index.classes = std::move(found.classes);
  index.train = std::move(found.samples[0]);
  index.valid = std::move(found.samples[1]);
  if (index.train.empty() || index.valid.empty()) {
    const fs::path& empty = index.train.empty() ? train : valid;
    throw DataError("'" + empty.string() + "' holds no images in its class folders (layout " +
                        "folders: " + (empty / "<class>" / "*.jpg").string() + ")",
                    kDataHint);
  }
  index.split = "folders";
  return index;
}

// <root>/<class>/*: class folders without an image are left out (and noted).
DatasetIndex folders_plain_tree(const DataConfig& data, std::uint64_t seed) {
  const fs::path root(data.root);
  DatasetIndex index;
  index.layout = data_layout_name(DataLayout::kFolders);
  folders_classes_of(root, root);
  ClassFolders found = folders_by_class({root}, index);
  index.classes = std::move(found.classes);
  layouts::sort_samples_by_path(found.samples[0]);
  folders_random_split(index, found.samples[0], data, seed, root);
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
