// Indexing a dataset: the choice of layout (data.layout, or auto-detection), what every layout
// gets afterwards (label sets for a multi-label task, the class check, sorting, data.subset, the
// notes), split.csv and evaluation data. The layouts themselves are in
// layout_{folders,kaggle,csv,pattern}.cpp, the helpers they share in layout_helpers.cpp.
//
// Directory listings are sorted and every random split is a pure function of the sorted paths
// and the seed, so the index is identical on every machine, rank and resume. Hidden entries
// (names starting with '.') and names without an image extension are skipped; every other entry
// is indexed whatever its type, so the loader skips, counts and names it instead of it vanishing
// here unreported. Never opens an image. Pure functions, thread-safe.
#include "ltfit/data/dataset_index.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include "data/layouts.h"
#include "ltfit/util/error.h"
#include "ltfit/util/random.h"

namespace ltfit {

namespace fs = std::filesystem;

// ---- index_dataset -------------------------------------------------------------------------

namespace {

std::string tried_layouts(const DataConfig& data) {
  const fs::path root(data.root);
  return "tried layout csv (" + layouts::csv_file_path(data).string() + "), folders (" +
         (root / data.train_folder / "<class>" / "*.jpg").string() + ", or " +
         (root / "<class>" / "*.jpg").string() + ") and kaggle (" +
         (root / "<class>.<N>.jpg").string() + " or " +
         (root / "train" / "<class>.<N>.jpg").string() + "), cifar10 (" +
         (root / "data_batch_1.bin").string() +
         " or data_batch_1, or in cifar-10-batches-bin/ "
         "or cifar-10-batches-py/), cifar100 (" +
         (root / "train.bin").string() +
         " or train, or in cifar-100-binary/ or cifar-100-python/)"
         " and shards (" +
         (root / data.shards.train).string() + ")";
}

DataLayout detect_layout(const DataConfig& data) {
  const fs::path root(data.root);
  for (const layouts::LayoutEntry& entry : layouts::layout_registry()) {
    if (entry.detect != nullptr && entry.detect(data)) return entry.layout;
  }
  if (layouts::has_plain_class_folders(root)) return DataLayout::kFolders;
  // Images lying in the root itself, not named <class>.<N>.jpg: the label may be in the name.
  const auto flat =
      layouts::is_directory_at(root) ? layouts::image_files_in(root) : std::vector<std::string>{};
  if (!flat.empty()) {
    throw DataError("no class folders, CSV file or <class>.<N>.jpg names under data root '" +
                        data.root + "', but " + std::to_string(flat.size()) +
                        " image files in it, named like '" +
                        fs::path(flat.front()).filename().string() + "': " + tried_layouts(data),
                    "when the label is in the file name, set data.layout: pattern and "
                    "data.label_pattern, whose first group is the label (for names like "
                    "'Abyssinian_12.jpg', as fastai's pets: '^(.+)_\\d+\\.jpg$'); "
                    "docs/labels.md");
  }
  throw DataError("no images found under data root '" + data.root + "': " + tried_layouts(data),
                  layouts::kDataHint);
}

DatasetIndex index_layout(const DataConfig& data, std::uint64_t seed, bool multi_label) {
  const DataLayout layout = data.layout == DataLayout::kAuto ? detect_layout(data) : data.layout;
  return layouts::layout_entry(layout).index(data, seed, multi_label);
}

// A layout's single labels as sets of one.
void make_label_sets(std::vector<Sample>& samples) {
  for (Sample& s : samples) s.labels = {s.label};
}

void require_classes(const DatasetIndex& index, const DataConfig& data) {
  if (index.classes.empty()) {
    throw DataError("data root '" + data.root + "' (layout " + index.layout +
                        ") has no labels at all: every image's label set is empty",
                    "a multi-label task needs at least one class");
  }
  if (!index.multi_label && index.classes.size() < 2) {
    throw DataError("data root '" + data.root + "' holds only one class ('" +
                        layouts::join_names(index.classes) + "'); a classifier needs at least two",
                    layouts::kDataHint);
  }
}

// Notes the classes that no training sample has (the model never learns them) and those no
// validation sample has (their accuracy is never measured), whatever the layout.
void note_one_split_classes(DatasetIndex& index) {
  const auto seen_in = [&](const std::vector<Sample>& samples) {
    std::vector<bool> seen(index.classes.size(), false);
    for (const Sample& s : samples) {
      if (!index.multi_label) seen[static_cast<std::size_t>(s.label)] = true;
      for (const std::int64_t label : s.labels) seen[static_cast<std::size_t>(label)] = true;
    }
    return seen;
  };
  const std::vector<bool> trained = seen_in(index.train);
  const std::vector<bool> validated = seen_in(index.valid);
  layouts::NoteTally only_valid("class(es) seen only in validation, never trained on (kept)");
  layouts::NoteTally only_train(
      "class(es) with no validation image: their accuracy is not "
      "measured (kept)");
  for (std::size_t k = 0; k < index.classes.size(); ++k) {
    if (!trained[k]) only_valid.add("'" + index.classes[k] + "'");
    // data.valid_pct 0 leaves no validation split at all: said once, by the trainer.
    if (trained[k] && !validated[k] && !index.valid.empty()) {
      only_train.add("'" + index.classes[k] + "'");
    }
  }
  only_valid.append_to(index.notes);
  only_train.append_to(index.notes);
}

// Notes data.valid_pct, when set to other than its default, where the data gives the split
// (data.valid_count under a layout other than kaggle is config_warnings').
void note_ignored_valid_pct(DatasetIndex& index, const DataConfig& data) {
  if (index.split != "valid_pct" && index.split != "valid_count" &&
      data.valid_pct != DataConfig{}.valid_pct) {
    std::ostringstream note;
    note << "data.valid_pct " << data.valid_pct << " is ignored: the data gives the split ("
         << (index.split == "folders"
                 ? "'" + data.train_folder + "' and '" + data.valid_folder + "' folders"
             : index.split == "test_batch"
                 ? "its training and test batches"
                 : "the CSV's '" + data.csv.valid_column.value_or("") + "' column")
         << ")";
    index.notes.push_back(note.str());
  }
}

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

DatasetIndex index_dataset(const DataConfig& data, std::uint64_t seed, bool multi_label) {
  if (!layouts::is_directory_at(fs::path(data.root))) {
    throw DataError(
        "data root '" + data.root + "' does not exist (data.root; " + tried_layouts(data) + ")",
        "if the data has moved, name its folder: ltfit evaluate --data DIR, or --set "
        "data.root=DIR; otherwise " +
            std::string(layouts::kDataHint));
  }
  DatasetIndex index = index_layout(data, seed, multi_label);
  if (multi_label && !index.multi_label) {
    make_label_sets(index.train);
    make_label_sets(index.valid);
    index.multi_label = true;
  }
  require_classes(index, data);
  layouts::sort_samples_by_path(index.train);
  layouts::sort_samples_by_path(index.valid);
  note_one_split_classes(index);
  note_ignored_valid_pct(index, data);
  keep_subset(index.train, data.subset, seed);
  keep_subset(index.valid, data.subset, seed ^ 0x5u);
  return index;
}

// ---- split.csv -----------------------------------------------------------------------------

namespace {

// `field` as RFC 4180 writes it: quoted, with doubled quotes, when it holds a comma, a quote, a
// line break, or spaces at either end.
std::string split_csv_field(const std::string& field) {
  const bool quote = field.find_first_of(",\"\r\n") != std::string::npos ||
                     (!field.empty() && (field.front() == ' ' || field.back() == ' '));
  if (!quote) return field;
  std::string out = "\"";
  for (const char c : field) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string split_csv_labels(const DatasetIndex& index, const Sample& sample) {
  if (!index.multi_label) return index.classes.at(static_cast<std::size_t>(sample.label));
  std::string text;
  for (const std::int64_t label : sample.labels)
    text += (text.empty() ? "" : " ") + index.classes.at(static_cast<std::size_t>(label));
  return text;
}

}  // namespace

std::string split_csv(const DatasetIndex& index, const std::string& root) {
  std::vector<std::pair<const Sample*, const char*>> rows;
  for (const Sample& s : index.train) rows.emplace_back(&s, "train");
  for (const Sample& s : index.valid) rows.emplace_back(&s, "valid");
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.first->path < b.first->path; });
  const fs::path base = fs::path(root).lexically_normal();
  std::string text = "path,split,labels\n";
  for (const auto& [sample, split] : rows) {
    const fs::path relative = fs::path(sample->path).lexically_normal().lexically_relative(base);
    text += split_csv_field(relative.empty() ? sample->path : relative.generic_string()) + "," +
            split + "," + split_csv_field(split_csv_labels(index, *sample)) + "\n";
  }
  return text;
}

// ---- evaluation data -----------------------------------------------------------------------

namespace {

constexpr std::array<const char*, 3> kSplitNames = {"train", "valid", "test"};

// The split folders (train, valid, test, in that order) directly in `root`.
std::vector<std::string> split_folders(const fs::path& root) {
  std::vector<std::string> splits;
  for (const char* name : kSplitNames) {
    if (layouts::is_directory_at(root / name)) splits.emplace_back(name);
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
    return !layouts::visible_subdirectories(root / split).empty();
  });
}

DataError missing_split(const fs::path& root, const std::string& split,
                        const std::vector<std::string>& splits, const std::string& layout) {
  return DataError("dataset root '" + root.string() + "' has no split '" + split + "' (" + layout +
                       "); its splits: " + (splits.empty() ? "none" : layouts::join_names(splits)),
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

// A CIFAR root's `split` (train; valid or test: the test batch), its labels renumbered as the
// model's `classes`; DataError when a class of the batches is not one of them.
EvalDataSet eval_cifar_root(const fs::path& root, const std::vector<std::string>& classes,
                            const std::string& split, const DataConfig& data, DataLayout layout) {
  const std::string name = data_layout_name(layout);
  if (split != "train" && split != "valid" && split != "test") {
    throw missing_split(root, split, {"train", "valid", "test"},
                        "layout " + name +
                            ": the training batches, and the test batch as "
                            "valid or test");
  }
  DataConfig cifar = data;
  cifar.root = root.string();
  DatasetIndex index = layouts::layout_entry(layout).index(cifar, 0, false);
  std::vector<Sample> samples = split == "train" ? std::move(index.train) : std::move(index.valid);
  std::vector<std::int64_t> to_model(index.classes.size());
  for (std::size_t k = 0; k < index.classes.size(); ++k) {
    const auto found = std::find(classes.begin(), classes.end(), index.classes[k]);
    if (found == classes.end()) {
      throw DataError("class '" + index.classes[k] + "' of the CIFAR batches in '" + root.string() +
                          "' is not one of the model's (" + layouts::join_names(classes) + ")",
                      "evaluate a model trained on these classes");
    }
    to_model[k] = found - classes.begin();
  }
  for (Sample& s : samples) s.label = to_model[static_cast<std::size_t>(s.label)];
  layouts::sort_samples_by_path(samples);
  return {std::move(samples), root.string(), split, name};
}

}  // namespace

EvalDataSet index_eval_data(const std::string& dir, const std::vector<std::string>& classes,
                            const std::string& split, const DataConfig& data, std::uint64_t seed) {
  const fs::path root(dir);
  const auto subfolders = layouts::is_directory_at(root) ? layouts::visible_subdirectories(root)
                                                         : std::vector<std::string>{};
  const bool class_level = any_of_names(subfolders, classes);
  const auto splits = split_folders(root);
  const std::string wanted = split.empty() ? "valid" : split;
  if (!class_level && has_split_with_classes(root, splits))
    return eval_folders_root(root, classes, wanted);
  if (!class_level && layouts::is_directory_at(root) && !layouts::kaggle_folder(root).empty()) {
    if (wanted != "train" && wanted != "valid") {
      throw missing_split(root, wanted, {"train", "valid"},
                          "layout kaggle: the checkpoint's seeded split, " +
                              layouts::drawn_split_words(data, seed));
    }
    return layouts::kaggle_eval_data(root, classes, wanted, data, seed);
  }
  if (!class_level && layouts::is_directory_at(root)) {
    DataConfig cifar = data;
    cifar.root = dir;
    for (const DataLayout layout : {DataLayout::kCifar10, DataLayout::kCifar100}) {
      if (layouts::layout_entry(layout).detect(cifar)) {
        return eval_cifar_root(root, classes, wanted, data, layout);
      }
    }
  }
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
