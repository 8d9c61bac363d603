// Indexing a dataset's image files: class folders ("folders") or Kaggle's flat cat.N.jpg files.
//
// Directory listings are sorted and the Kaggle validation split is drawn with a Fisher–Yates
// shuffle driven by our own SplitMix64 (ltfit/util/random.h), so the index is identical on every
// machine and standard library. Hidden entries (names starting with '.') and names without an
// image extension are skipped; every other entry is indexed whatever its type (see
// is_image_file). Never opens an image. Pure functions, thread-safe.
#include "ltfit/data/dataset_index.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>

#include "ltfit/util/error.h"
#include "ltfit/util/random.h"

namespace ltfit {
namespace {

namespace fs = std::filesystem;

constexpr std::array<const char*, 7> kImageExtensions = {"jpg",  "jpeg", "png", "bmp",
                                                         "webp", "tif",  "tiff"};
constexpr const char* kDataHint =
    "run `ltfit synth --out DIR` for a synthetic set, or see data/README.md to fetch the real "
    "one (fastai's dogscats archive, 23,000/2,000 split, or Kaggle's dogs-vs-cats)";

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

bool is_hidden(const fs::path& path) {
  const std::string name = path.filename().string();
  return !name.empty() && name[0] == '.';
}

// By name only, whatever the entry is: a FIFO, a directory or a dangling link named *.jpg is
// indexed like any file, so the loader skips, counts and names it (without opening it) instead of
// it vanishing here unreported.
bool is_image_file(const fs::directory_entry& entry) {
  return !is_hidden(entry.path()) && has_image_extension(entry.path().string());
}

// Visible subdirectories of `dir`, sorted by name.
std::vector<std::string> subdirectory_names(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::error_code ignored;
    if (entry.is_directory(ignored) && !is_hidden(entry.path())) {
      names.push_back(entry.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Image files directly in `dir`, sorted by path.
std::vector<std::string> image_files(const fs::path& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (is_image_file(entry)) files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

bool directory_exists(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

void sort_by_path(std::vector<Sample>& samples) {
  std::sort(samples.begin(), samples.end(),
            [](const Sample& a, const Sample& b) { return a.path < b.path; });
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

// Samples of `dir`/<class>/* for each class; a missing or empty class folder is an error.
std::vector<Sample> index_split(const fs::path& dir, const std::vector<std::string>& classes) {
  std::vector<Sample> samples;
  for (size_t label = 0; label < classes.size(); ++label) {
    const fs::path class_dir = dir / classes[label];
    if (!directory_exists(class_dir)) {
      throw DataError("class folder '" + class_dir.string() + "' is missing (classes from " +
                          (dir.parent_path() / "train").string() + ": " + joined(classes) + ")",
                      "every split needs the same class folders; " + std::string(kDataHint));
    }
    const auto files = image_files(class_dir);
    if (files.empty()) {
      throw DataError("class folder '" + class_dir.string() + "' holds no images (looked for " +
                          "*.jpg, *.jpeg, *.png, *.bmp, *.webp, *.tif, *.tiff)",
                      "add images or remove the folder; " + std::string(kDataHint));
    }
    for (const auto& file : files) samples.push_back({file, static_cast<std::int64_t>(label)});
  }
  return samples;
}

// True when `root`/train has a subdirectory holding an image and `root`/valid exists.
bool looks_like_folders(const fs::path& root) {
  if (!directory_exists(root / "valid")) return false;
  for (const auto& name : subdirectory_names(root / "train")) {
    if (!image_files(root / "train" / name).empty()) return true;
  }
  return false;
}

// The class of a Kaggle-style file name `<class>.<N>.<ext>`, or "" if it is not one.
std::string kaggle_class(const fs::path& path) {
  const std::string name = path.filename().string();
  const size_t first = name.find('.');
  const size_t last = name.rfind('.');
  if (first == std::string::npos || first == 0 || last <= first + 1) return "";
  const std::string number = name.substr(first + 1, last - first - 1);
  const bool digits = std::all_of(number.begin(), number.end(),
                                  [](unsigned char c) { return std::isdigit(c) != 0; });
  return digits ? name.substr(0, first) : "";
}

// Kaggle-style image files of `dir`, sorted by path.
std::vector<std::string> kaggle_files(const fs::path& dir) {
  std::vector<std::string> files;
  for (const auto& file : image_files(dir)) {
    if (!kaggle_class(file).empty()) files.push_back(file);
  }
  return files;
}

// The folder holding the Kaggle files: `root`/train if it has any, else `root`; "" if neither.
fs::path kaggle_dir(const fs::path& root) {
  if (!kaggle_files(root / "train").empty()) return root / "train";
  if (!kaggle_files(root).empty()) return root;
  return {};
}

std::string tried_layouts(const fs::path& root) {
  return "tried layout folders (" + (root / "train" / "<class>" / "*.jpg").string() + " with " +
         (root / "valid" / "<class>").string() + ") and kaggle (" +
         (root / "<class>.<N>.jpg").string() + " or " +
         (root / "train" / "<class>.<N>.jpg").string() + ")";
}

DatasetIndex index_folders(const fs::path& root) {
  DatasetIndex index;
  index.layout = data_layout_name(DataLayout::kFolders);
  index.classes = subdirectory_names(root / "train");
  if (index.classes.empty()) {
    throw DataError("no class folders in '" + (root / "train").string() + "' (layout folders)",
                    kDataHint);
  }
  const auto valid_classes = subdirectory_names(root / "valid");
  for (const auto& name : valid_classes) {
    if (!std::binary_search(index.classes.begin(), index.classes.end(), name)) {
      throw DataError("class folder '" + (root / "valid" / name).string() +
                          "' has no counterpart in '" + (root / "train").string() + "'",
                      "train and valid need the same class folders");
    }
  }
  index.train = index_split(root / "train", index.classes);
  index.valid = index_split(root / "valid", index.classes);
  return index;
}

// Indices 0..n-1 in a Fisher–Yates order driven by SplitMix64(seed).
std::vector<size_t> shuffled_order(size_t n, std::uint64_t seed) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  SplitMix64 rng(seed);
  for (size_t i = n; i > 1; --i) {
    const auto j = static_cast<size_t>(rng.below(i));
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

DatasetIndex index_kaggle(const fs::path& root, int valid_count, std::uint64_t seed) {
  const fs::path dir = kaggle_dir(root);
  if (dir.empty()) {
    throw DataError("no Kaggle-style images (<class>.<N>.jpg) in '" + root.string() + "' or '" +
                        (root / "train").string() + "' (layout kaggle)",
                    kDataHint);
  }
  const auto files = kaggle_files(dir);
  if (valid_count < 1 || static_cast<size_t>(valid_count) >= files.size()) {
    throw DataError("data.valid_count is " + std::to_string(valid_count) + " but '" + dir.string() +
                        "' holds " + std::to_string(files.size()) + " images (layout kaggle: " +
                        (valid_count < 1 ? "the validation split would be empty"
                                         : "the training split would be empty") +
                        ")",
                    "set data.valid_count between 1 and the number of images minus one");
  }
  DatasetIndex index;
  index.layout = data_layout_name(DataLayout::kKaggle);
  std::map<std::string, std::int64_t> labels;
  for (const auto& file : files) labels.emplace(kaggle_class(file), 0);
  for (auto& [name, label] : labels) {
    label = static_cast<std::int64_t>(index.classes.size());
    index.classes.push_back(name);
  }
  const auto order = shuffled_order(files.size(), seed);
  for (size_t k = 0; k < order.size(); ++k) {
    const std::string& file = files[order[k]];
    auto& split = k < static_cast<size_t>(valid_count) ? index.valid : index.train;
    split.push_back({file, labels.at(kaggle_class(file))});
  }
  sort_by_path(index.train);
  sort_by_path(index.valid);
  return index;
}

DataLayout resolve_layout(const fs::path& root, DataLayout layout) {
  if (layout != DataLayout::kAuto) return layout;
  if (looks_like_folders(root)) return DataLayout::kFolders;
  if (!kaggle_dir(root).empty()) return DataLayout::kKaggle;
  throw DataError("no images found under data root '" + root.string() + "': " + tried_layouts(root),
                  kDataHint);
}

void require_two_classes(const DatasetIndex& index, const fs::path& root) {
  if (index.classes.size() < 2) {
    throw DataError("data root '" + root.string() + "' holds only one class ('" +
                        joined(index.classes) + "'); a classifier needs at least two",
                    kDataHint);
  }
}

}  // namespace

bool has_image_extension(const std::string& path) {
  const std::string ext = lower(fs::path(path).extension().string());
  if (ext.size() < 2) return false;
  return std::find(kImageExtensions.begin(), kImageExtensions.end(), ext.substr(1)) !=
         kImageExtensions.end();
}

namespace {

// Keeps ceil(fraction * n) samples of each class (at least one), chosen by `seed`, in path order.
void keep_subset(std::vector<Sample>& samples, double fraction, std::uint64_t seed) {
  if (fraction >= 1.0) return;
  std::map<std::int64_t, std::vector<std::size_t>> by_class;
  for (std::size_t i = 0; i < samples.size(); ++i) by_class[samples[i].label].push_back(i);
  std::vector<bool> keep(samples.size(), false);
  for (auto& [label, positions] : by_class) {
    const auto order = epoch_permutation(static_cast<std::int64_t>(positions.size()),
                                         mix_seed(seed, static_cast<std::uint64_t>(label)), 0);
    const auto wanted = static_cast<std::size_t>(
        std::max(1.0, std::ceil(fraction * static_cast<double>(positions.size()))));
    for (std::size_t k = 0; k < wanted && k < order.size(); ++k)
      keep[positions[static_cast<std::size_t>(order[k])]] = true;
  }
  std::vector<Sample> kept;
  for (std::size_t i = 0; i < samples.size(); ++i)
    if (keep[i]) kept.push_back(samples[i]);
  samples = std::move(kept);
}

}  // namespace

DatasetIndex index_dataset(const DataConfig& data, std::uint64_t seed) {
  const fs::path root(data.root);
  if (!directory_exists(root)) {
    throw DataError(
        "data root '" + data.root + "' does not exist (data.root; " + tried_layouts(root) + ")",
        "if the data has moved, name its folder: ltfit evaluate --data DIR, or --set "
        "data.root=DIR; otherwise " +
            std::string(kDataHint));
  }
  DatasetIndex index = resolve_layout(root, data.layout) == DataLayout::kFolders
                           ? index_folders(root)
                           : index_kaggle(root, data.valid_count, seed);
  require_two_classes(index, root);
  sort_by_path(index.train);
  sort_by_path(index.valid);
  keep_subset(index.train, data.subset, seed);
  keep_subset(index.valid, data.subset, seed ^ 0x5u);
  return index;
}

std::vector<Sample> index_class_folders(const std::string& dir,
                                        const std::vector<std::string>& classes) {
  const fs::path root(dir);
  if (!directory_exists(root)) {
    throw DataError("data folder '" + dir + "' does not exist (looked for " +
                        (root / "<class>" / "*.jpg").string() + " with classes " + joined(classes) +
                        ")",
                    kDataHint);
  }
  for (const auto& name : subdirectory_names(root)) {
    if (std::find(classes.begin(), classes.end(), name) == classes.end()) {
      throw DataError("folder '" + (root / name).string() +
                          "' is not one of the model's classes (" + joined(classes) + ")",
                      "name the class folders as in training, or remove the extra folder");
    }
  }
  std::vector<std::string> missing;
  for (const auto& name : classes) {
    if (!directory_exists(root / name)) missing.push_back(name);
  }
  if (!missing.empty()) {
    throw DataError("class folder(s) missing in '" + dir + "': " + joined(missing),
                    "evaluation needs one folder per class (" + joined(classes) +
                        "), or a dataset root holding train/ valid/ (test/) with such folders, "
                        "or Kaggle's flat <class>.<N>.jpg files");
  }
  std::vector<Sample> samples;
  for (size_t label = 0; label < classes.size(); ++label) {
    for (const auto& file : image_files(root / classes[label])) {
      samples.push_back({file, static_cast<std::int64_t>(label)});
    }
  }
  if (samples.empty()) {
    throw DataError("no images in the class folders of '" + dir + "'", kDataHint);
  }
  sort_by_path(samples);
  return samples;
}

namespace {

constexpr std::array<const char*, 3> kSplitNames = {"train", "valid", "test"};

// The split folders (train, valid, test, in that order) directly in `root`.
std::vector<std::string> split_folders(const fs::path& root) {
  std::vector<std::string> splits;
  for (const char* name : kSplitNames) {
    if (directory_exists(root / name)) splits.emplace_back(name);
  }
  return splits;
}

bool any_of_names(const std::vector<std::string>& names, const std::vector<std::string>& set) {
  return std::any_of(names.begin(), names.end(), [&](const std::string& name) {
    return std::find(set.begin(), set.end(), name) != set.end();
  });
}

// True when one of `root`'s split folders holds a subfolder (a class folder).
bool has_split_with_classes(const fs::path& root, const std::vector<std::string>& splits) {
  return std::any_of(splits.begin(), splits.end(), [&](const std::string& split) {
    return !subdirectory_names(root / split).empty();
  });
}

DataError missing_split(const fs::path& root, const std::string& split,
                        const std::vector<std::string>& splits, const std::string& layout) {
  return DataError("dataset root '" + root.string() + "' has no split '" + split + "' (" + layout +
                       "); its splits: " + (splits.empty() ? "none" : joined(splits)),
                   "choose one of them with --split");
}

EvalDataSet eval_folders_root(const fs::path& root, const std::vector<std::string>& classes,
                              const std::string& split) {
  const auto splits = split_folders(root);
  if (std::find(splits.begin(), splits.end(), split) == splits.end())
    throw missing_split(root, split, splits, "layout folders");
  const fs::path folder = root / split;
  return {index_class_folders(folder.string(), classes), folder.string(), split,
          data_layout_name(DataLayout::kFolders)};
}

// Kaggle's flat files, split as training split them (data.valid_count, run.seed), labelled by
// the model's class names.
EvalDataSet eval_kaggle_root(const fs::path& root, const std::vector<std::string>& classes,
                             const std::string& split, int valid_count, std::uint64_t seed) {
  const std::string layout = "layout kaggle: the checkpoint's seeded split, data.valid_count " +
                             std::to_string(valid_count) + ", run.seed " + std::to_string(seed);
  if (split != "train" && split != "valid")
    throw missing_split(root, split, {"train", "valid"}, layout);
  const DatasetIndex index = index_kaggle(root, valid_count, seed);
  std::vector<std::int64_t> model_label(index.classes.size());
  for (std::size_t k = 0; k < index.classes.size(); ++k) {
    const auto it = std::find(classes.begin(), classes.end(), index.classes[k]);
    if (it == classes.end()) {
      throw DataError("Kaggle-style images of class '" + index.classes[k] + "' in '" +
                          kaggle_dir(root).string() + "' are not one of the model's classes (" +
                          joined(classes) + ")",
                      "evaluate on images of the classes the model was trained on");
    }
    model_label[k] = static_cast<std::int64_t>(it - classes.begin());
  }
  EvalDataSet out{split == "train" ? index.train : index.valid, kaggle_dir(root).string(), split,
                  data_layout_name(DataLayout::kKaggle)};
  for (Sample& s : out.samples) s.label = model_label[static_cast<std::size_t>(s.label)];
  if (out.samples.empty()) {
    throw DataError(
        "split '" + split + "' of '" + root.string() + "' holds no images (" + layout + ")",
        "choose the other split with --split");
  }
  return out;
}

}  // namespace

EvalDataSet index_eval_data(const std::string& dir, const std::vector<std::string>& classes,
                            const std::string& split, int valid_count, std::uint64_t seed) {
  const fs::path root(dir);
  const auto subfolders =
      directory_exists(root) ? subdirectory_names(root) : std::vector<std::string>{};
  const bool class_level = any_of_names(subfolders, classes);
  const auto splits = split_folders(root);
  const std::string wanted = split.empty() ? "valid" : split;
  if (!class_level && has_split_with_classes(root, splits))
    return eval_folders_root(root, classes, wanted);
  if (!class_level && directory_exists(root) && !kaggle_dir(root).empty())
    return eval_kaggle_root(root, classes, wanted, valid_count, seed);
  if (!class_level && !splits.empty()) return eval_folders_root(root, classes, wanted);
  if (!split.empty() && class_level) {
    throw ConfigError("--split " + split + ": '" + dir +
                          "' is a folder of class folders, not a dataset root with train/ valid/ "
                          "(test/) folders",
                      "drop --split to evaluate it, or give the dataset root");
  }
  return {index_class_folders(dir, classes), dir, "", "class folders"};
}

}  // namespace ltfit
