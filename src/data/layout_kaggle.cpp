// Layout kaggle: Kaggle's dogs-vs-cats naming, <class>.<N>.<ext>, flat in <root>/train (or
// <root>): the pattern layout with a fixed pattern, one folder deep. The validation split is
// drawn as every layout draws one, by data.valid_pct (fastai's RandomSplitter); or, when
// `data.valid_count` is set (> 0), exactly that many images drawn by a Fisher–Yates shuffle driven
// by our own SplitMix64 (ltfit/util/random.h) from the seed, as before data.valid_pct existed, so
// old runs (whose config.yaml holds valid_count: 2000) resume on the split they trained on. Image
// files of another name (Kaggle's unlabelled 1.jpg) are left out and noted. Also the Kaggle side of
// index_eval_data. Pure functions, thread-safe.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#include "data/layouts.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/util/error.h"
#include "ltfit/util/random.h"

namespace ltfit {
namespace {

namespace fs = std::filesystem;

// The class of a Kaggle-style file name `<class>.<N>.<ext>`, or "" if it is not one.
std::string kaggle_class(const fs::path& path) {
  const std::string name = path.filename().string();
  const std::size_t first = name.find('.');
  const std::size_t last = name.rfind('.');
  if (first == std::string::npos || first == 0 || last <= first + 1) return "";
  const std::string number = name.substr(first + 1, last - first - 1);
  const bool digits = std::all_of(number.begin(), number.end(),
                                  [](unsigned char c) { return std::isdigit(c) != 0; });
  return digits ? name.substr(0, first) : "";
}

bool has_kaggle_file(const fs::path& dir) {
  const auto files = layouts::image_files_in(dir);
  return std::any_of(files.begin(), files.end(),
                     [](const std::string& file) { return !kaggle_class(file).empty(); });
}

// Indices 0..n-1 in a Fisher–Yates order driven by SplitMix64(seed).
std::vector<std::size_t> kaggle_shuffled_order(std::size_t n, std::uint64_t seed) {
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  SplitMix64 rng(seed);
  for (std::size_t i = n; i > 1; --i) {
    const auto j = static_cast<std::size_t>(rng.below(i));
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

void check_valid_count(int valid_count, std::size_t files, const fs::path& dir) {
  if (valid_count >= 1 && static_cast<std::size_t>(valid_count) < files) return;
  throw DataError("data.valid_count is " + std::to_string(valid_count) + " but '" + dir.string() +
                      "' holds " + std::to_string(files) + " images (layout kaggle: " +
                      (valid_count < 1 ? "the validation split would be empty"
                                       : "the training split would be empty") +
                      ")",
                  "set data.valid_count between 1 and the number of images minus one");
}

}  // namespace

namespace layouts {

fs::path kaggle_folder(const fs::path& root) {
  if (has_kaggle_file(root / "train")) return root / "train";
  if (has_kaggle_file(root)) return root;
  return {};
}

DatasetIndex index_kaggle_layout(const fs::path& root, const DataConfig& data, std::uint64_t seed) {
  const int valid_count = data.valid_count;
  const fs::path dir = kaggle_folder(root);
  if (dir.empty()) {
    throw DataError("no Kaggle-style images (<class>.<N>.jpg) in '" + root.string() + "' or '" +
                        (root / "train").string() + "' (layout kaggle)",
                    kDataHint);
  }
  DatasetIndex index;
  index.layout = data_layout_name(DataLayout::kKaggle);
  index.split = "valid_count";
  NoteTally unnamed("image file(s) not named <class>.<N>.<ext> in '" + dir.string() +
                    "', left out (layout kaggle)");
  std::vector<std::string> files;
  std::map<std::string, std::int64_t> labels;
  for (const auto& file : image_files_in(dir)) {
    const std::string name = kaggle_class(file);
    if (name.empty()) {
      unnamed.add(fs::path(file).filename().string());
      continue;
    }
    files.push_back(file);
    labels.emplace(name, 0);
  }
  unnamed.append_to(index.notes);
  if (valid_count == 0) {  // unset: the split every layout draws
    std::vector<LabelledFile> labelled;
    for (const auto& file : files) labelled.push_back({file, {kaggle_class(file)}});
    split_labelled_files(index, labelled, data.valid_pct, seed, false);
    return index;
  }
  check_valid_count(valid_count, files.size(), dir);
  for (auto& [name, label] : labels) {
    label = static_cast<std::int64_t>(index.classes.size());
    index.classes.push_back(name);
  }
  const auto order = kaggle_shuffled_order(files.size(), seed);
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::string& file = files[order[k]];
    auto& split = k < static_cast<std::size_t>(valid_count) ? index.valid : index.train;
    split.push_back({file, labels.at(kaggle_class(file))});
  }
  sort_samples_by_path(index.train);
  sort_samples_by_path(index.valid);
  return index;
}

EvalDataSet kaggle_eval_data(const fs::path& root, const std::vector<std::string>& classes,
                             const std::string& split, const DataConfig& data, std::uint64_t seed) {
  const DatasetIndex index = index_kaggle_layout(root, data, seed);
  const fs::path folder = kaggle_folder(root);
  std::vector<std::int64_t> model_label(index.classes.size());
  for (std::size_t k = 0; k < index.classes.size(); ++k) {
    const auto it = std::find(classes.begin(), classes.end(), index.classes[k]);
    if (it == classes.end()) {
      throw DataError("Kaggle-style images of class '" + index.classes[k] + "' in '" +
                          folder.string() + "' are not one of the model's classes (" +
                          join_names(classes) + ")",
                      "evaluate on images of the classes the model was trained on");
    }
    model_label[k] = static_cast<std::int64_t>(it - classes.begin());
  }
  EvalDataSet out{split == "train" ? index.train : index.valid, folder.string(), split,
                  data_layout_name(DataLayout::kKaggle)};
  for (Sample& s : out.samples) s.label = model_label[static_cast<std::size_t>(s.label)];
  if (out.samples.empty()) {
    throw DataError("split '" + split + "' of '" + root.string() +
                        "' holds no images (layout kaggle: the checkpoint's seeded split, " +
                        drawn_split_words(data, seed) + ")",
                    "choose the other split with --split");
  }
  return out;
}

}  // namespace layouts
}  // namespace ltfit
