// The dataset layouts behind index_dataset (dataset_index.h), one file each, and the helpers
// they share (defined in layout_helpers.cpp): directory listings, the seeded random split, the
// check that a path stays inside the data root, and the notes about what was left out.
//
// Each layout returns an index of one label per sample (Sample::labels empty) unless it reads
// label sets itself (csv); index_dataset then turns single labels into sets for a multi-label
// task, checks the classes, sorts and subsets. Private to src/data. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "ltfit/config/config.h"
#include "ltfit/data/dataset_index.h"

namespace ltfit::layouts {

// The hint of a data error that a missing or empty dataset gets.
inline constexpr const char* kDataHint =
    "run `ltfit synth --out DIR` for a synthetic set, or see data/README.md to fetch the real "
    "one (fastai's dogscats archive, 23,000/2,000 split, or Kaggle's dogs-vs-cats)";

// ---- the registry ---------------------------------------------------------------------------

// One layout: its data.layout value, how auto-detection recognises it (in registry order; null:
// only chosen by name), and how it indexes (`multi_label`: the task wants label sets). A new
// layout (a source of samples: files, records, shards) is its own file and one line in
// layout_registry() (layout_registry.cpp), with its name in config's DataLayout table.
struct LayoutEntry {
  DataLayout layout;
  bool (*detect)(const DataConfig& data);
  DatasetIndex (*index)(const DataConfig& data, std::uint64_t seed, bool multi_label);
};
const std::vector<LayoutEntry>& layout_registry();
// The entry of `layout` (not kAuto).
const LayoutEntry& layout_entry(DataLayout layout);

// ---- the layouts ---------------------------------------------------------------------------

// folders: <root>/<train_folder>/<class>/* with <root>/<valid_folder>/<class>/* (split
// "folders"), the train folder split by data.valid_pct when there is no valid folder, or a plain
// tree <root>/<class>/* split by data.valid_pct (split "valid_pct").
DatasetIndex index_folders_layout(const DataConfig& data, std::uint64_t seed);

// kaggle: <class>.<N>.<ext> in <root>/train or <root>; data.valid_count of them drawn by `seed`
// (split "valid_count") when it is set, else data.valid_pct as every layout (split "valid_pct").
DatasetIndex index_kaggle_layout(const std::filesystem::path& root, const DataConfig& data,
                                 std::uint64_t seed);

// csv: data.csv's rows; label sets when `multi_label`.
DatasetIndex index_csv_layout(const DataConfig& data, std::uint64_t seed, bool multi_label);

// pattern: every image under the root, labelled by data.label_pattern's first group.
DatasetIndex index_pattern_layout(const DataConfig& data, std::uint64_t seed);

// cifar10, cifar100: CIFAR's binary batch files (layout_cifar.cpp) or its Python version's
// pickles (layout_cifar_python.cpp; the binary one wins where both are): records of a label (two
// for CIFAR-100: coarse, fine) and a 32×32 image as its R, G and B planes, held as one block of
// pixels; samples named "<file>#<record>"; the training batches train, the test batch validates
// (split "test_batch"). DataError (exit 3) naming the file for a missing, truncated or
// mis-sized file, a label past the class names, or class names that are missing or repeated.
DatasetIndex index_cifar10_layout(const DataConfig& data, std::uint64_t seed, bool multi_label);
DatasetIndex index_cifar100_layout(const DataConfig& data, std::uint64_t seed, bool multi_label);
// Whether `data.root` (or its archive folder) holds either version's batches.
bool has_cifar10_batches(const DataConfig& data);
bool has_cifar100_batches(const DataConfig& data);

// shards: WebDataset's tar files named by data.shards (layout_shards.cpp): each sample the
// members sharing a key, an image and its .cls/.json label, named "<shard>#<member>" and read by
// offset (Sample::member); split by the validation shards ("shards") or data.valid_pct.
// DataError naming the shard for a missing or malformed one or a bad label member; ConfigError
// for a malformed pattern. has_shards: whether data.shards.train names files under data.root.
DatasetIndex index_shards_layout(const DataConfig& data, std::uint64_t seed, bool multi_label);
bool has_shards(const DataConfig& data);

// index_eval_data's Kaggle root: its `split` (train | valid) as training drew it, labelled by
// the model's `classes`. DataError when a class is not one of them or the split is empty.
EvalDataSet kaggle_eval_data(const std::filesystem::path& root,
                             const std::vector<std::string>& classes, const std::string& split,
                             const DataConfig& data, std::uint64_t seed);

// "data.valid_pct 0.2, run.seed 42" (or data.valid_count's): how a drawn split was drawn.
std::string drawn_split_words(const DataConfig& data, std::uint64_t seed);

// ---- what auto-detection asks ---------------------------------------------------------------

// True when `root`/`train_folder` has a subfolder holding an image.
bool has_split_class_folders(const std::filesystem::path& root, const std::string& train_folder);
// True when a visible subfolder of `root` holds an image (a plain tree of class folders).
bool has_plain_class_folders(const std::filesystem::path& root);
// The folder holding Kaggle-style files: `root`/train if it has any, else `root`; "" if neither.
std::filesystem::path kaggle_folder(const std::filesystem::path& root);
// data.csv.file: relative to the root unless absolute.
std::filesystem::path csv_file_path(const DataConfig& data);

// ---- shared helpers ------------------------------------------------------------------------

bool is_hidden_entry(const std::filesystem::path& path);  // name starts with '.'
bool is_directory_at(const std::filesystem::path& path);  // false on any error
// Visible subdirectories of `dir`, sorted by name; none when `dir` cannot be read.
std::vector<std::string> visible_subdirectories(const std::filesystem::path& dir);
// Image files (by name, whatever the entry is) directly in `dir`, sorted by path.
std::vector<std::string> image_files_in(const std::filesystem::path& dir);
void sort_samples_by_path(std::vector<Sample>& samples);
std::string join_names(const std::vector<std::string>& names);  // "a, b, c"

// fastai's RandomSplitter(valid_pct, seed) over `n` items: torch.manual_seed(seed), perm =
// torch.randperm(n), cut = int(valid_pct * n), valid = perm[:cut], train = perm[cut:] (the
// positions, in that order). The cut is kept within [1, n-1]: each side gets an image. DataError
// naming `what` when n < 2.
struct RandomSplit {
  std::vector<std::size_t> train;
  std::vector<std::size_t> valid;
};
RandomSplit random_split(std::size_t n, double valid_pct, std::uint64_t seed,
                         const std::string& what);

// One file and its class names, before the classes are numbered.
struct LabelledFile {
  std::string path;
  std::vector<std::string> names;  // one name (single-label), or a set (multi-label)
};
// The sorted union of the files' names.
std::vector<std::string> class_names_of(const std::vector<LabelledFile>& files);
// `file` as a Sample of `classes`: a label set when `multi_label`, else names[0]'s index.
Sample labelled_sample(const LabelledFile& file, const std::vector<std::string>& classes,
                       bool multi_label);
// Classes numbered, then `files` (sorted by path) split by data.valid_pct and `seed` into
// index.train / index.valid; sets index.classes and index.split ("valid_pct").
void split_labelled_files(DatasetIndex& index, const std::vector<LabelledFile>& files,
                          double valid_pct, std::uint64_t seed, bool multi_label);

// Whether paths stay inside the data root once `..` and symbolic links are resolved (defined in
// layout_csv.cpp, its user).
class RootGuard {
 public:
  explicit RootGuard(const std::filesystem::path& root);  // the root must exist
  // "" when `path` resolves inside the root; else why not (where it resolves to). `resolved`,
  // when given, receives the resolved path (weakly_canonical).
  std::string escape_reason(const std::filesystem::path& path,
                            std::filesystem::path* resolved = nullptr) const;

 private:
  std::filesystem::path root_;  // canonical
};

// Counts one kind of thing left out or looking wrong and keeps the first few examples; its note
// reads "<count> <what>: ex1, ex2, ex3 (and N more)".
class NoteTally {
 public:
  explicit NoteTally(std::string what) : what_(std::move(what)) {}
  void add(const std::string& example);
  std::size_t count() const { return count_; }
  // Appends the note to `notes` when anything was counted.
  void append_to(std::vector<std::string>& notes) const;

 private:
  static constexpr std::size_t kExamples = 3;
  std::string what_;
  std::size_t count_ = 0;
  std::vector<std::string> examples_;
};

}  // namespace ltfit::layouts
