// The layouts index_dataset knows (layouts.h): one line each, in auto-detection's order. Class
// folders directly under the root are auto-detection's last resort (dataset_index.cpp), after
// every layout here: a CIFAR root holds a batch folder, a CSV root an image folder.
// Thread-safe: the table is built once.
#include <algorithm>
#include <filesystem>

#include "data/layouts.h"
#include "ltfit/util/error.h"

namespace ltfit::layouts {
namespace {

bool detect_split_folders(const DataConfig& data) {
  return has_split_class_folders(std::filesystem::path(data.root), data.train_folder);
}

bool detect_csv(const DataConfig& data) {
  std::error_code ec;
  return std::filesystem::exists(csv_file_path(data), ec);
}

bool detect_kaggle(const DataConfig& data) {
  return !kaggle_folder(std::filesystem::path(data.root)).empty();
}

DatasetIndex folders(const DataConfig& data, std::uint64_t seed, bool /*multi_label*/) {
  return index_folders_layout(data, seed);
}

DatasetIndex kaggle(const DataConfig& data, std::uint64_t seed, bool /*multi_label*/) {
  return index_kaggle_layout(std::filesystem::path(data.root), data, seed);
}

DatasetIndex pattern(const DataConfig& data, std::uint64_t seed, bool /*multi_label*/) {
  return index_pattern_layout(data, seed);
}

}  // namespace

const std::vector<LayoutEntry>& layout_registry() {
  // Class folders under train/ first: a folders set that also keeps a labels.csv (fastai's
  // mnist_sample) is read as folders; a CSV set's images sit in one plain folder.
  static const std::vector<LayoutEntry> entries = {
      {DataLayout::kFolders, detect_split_folders, folders},
      {DataLayout::kCsv, detect_csv, index_csv_layout},
      {DataLayout::kKaggle, detect_kaggle, kaggle},
      {DataLayout::kCifar10, has_cifar10_batches, index_cifar10_layout},
      {DataLayout::kCifar100, has_cifar100_batches, index_cifar100_layout},
      {DataLayout::kShards, has_shards, index_shards_layout},
      {DataLayout::kPattern, nullptr, pattern},  // needs data.label_pattern: never guessed
  };
  return entries;
}

const LayoutEntry& layout_entry(DataLayout layout) {
  const auto& entries = layout_registry();
  const auto found = std::find_if(entries.begin(), entries.end(),
                                  [layout](const LayoutEntry& e) { return e.layout == layout; });
  LTFIT_CHECK(found != entries.end(), "no layout registered for " + data_layout_name(layout));
  return *found;
}

}  // namespace ltfit::layouts
