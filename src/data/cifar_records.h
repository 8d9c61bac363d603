// What CIFAR's two versions share (private to src/data): the binary batches (layout_cifar.cpp)
// and the Python pickles (layout_cifar_python.cpp) both hold records of a label and a 32×32
// image as its R, G and B planes; both end as one block of RGB rows that every sample's
// SampleImage views, and as classes numbered in sorted order as every layout's are. Pure
// functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "data/regular_file.h"
#include "ltfit/config/config.h"
#include "ltfit/data/dataset_index.h"

namespace ltfit::layouts::cifar {

inline constexpr int kSide = 32;
inline constexpr std::size_t kPlaneBytes = std::size_t(kSide) * kSide;
inline constexpr std::size_t kPixelBytes = 3 * kPlaneBytes;
inline constexpr std::uint64_t kMaxBatchFileBytes = 1ULL << 30;  // CIFAR-100's train: 154 MB
inline constexpr std::size_t kMaxClasses = 256;                  // a binary label is one byte

// One split's records: the pixels of all of them in one block (HWC), each record's label
// (numbered in sorted class order) and name ("<file>#<record>").
struct Records {
  std::shared_ptr<std::vector<std::uint8_t>> pixels = std::make_shared<std::vector<std::uint8_t>>();
  std::vector<std::int64_t> labels;
  std::vector<std::string> names;
};

// Appends a record whose R, G and B planes start at `planes`.
void append_record(Records& records, const std::uint8_t* planes, std::int64_t label,
                   std::string name);
// The split as samples of the shared block.
std::vector<Sample> to_samples(Records records);

// "layout cifar10": how messages name the layout.
std::string layout_words(DataLayout layout);

// Throws DataError naming `path` unless `names` (the class names in raw-label order) are 2 to 256
// names of UTF-8 text, none blank, repeated or holding control bytes.
void check_class_names(const std::vector<std::string>& names, const std::filesystem::path& path,
                       DataLayout layout);

// The sorted classes of `names` (raw-label order) in `index`, and each raw label's sorted index.
std::vector<std::int64_t> number_classes(const std::vector<std::string>& names,
                                         DatasetIndex& index);

// The regular file `path` opened, its size in `size`; DataError naming it otherwise.
FileHandle open_data_file(const std::filesystem::path& path, std::uint64_t* size,
                          DataLayout layout);

// The Python version (layout_cifar_python.cpp): the folder under data.root holding it
// (cifar-10-batches-py / cifar-100-python, or data.root itself), "" when there is none; and its
// index. DataError (exit 3) naming the file for a missing, truncated or foreign pickle, a
// refused global, a data array of another shape or type, labels that do not match it, or class
// names that are missing or repeated.
std::filesystem::path python_folder(const DataConfig& data, bool hundred);
DatasetIndex index_python(const DataConfig& data, const std::filesystem::path& dir, bool hundred);

// The Python version's files as Python 2 pickled CIFAR's (cifar_pickles.cpp): a batch dict of
// records with `labels` (CIFAR-100: as fine and coarse labels), their `planes` (3,072 bytes
// each) and file names; the meta dict of the class `names` (CIFAR-100: fine, and `coarse_names`).
std::string python_batch_pickle(const std::vector<std::int64_t>& labels, const std::string& planes,
                                const std::vector<std::string>& files, bool hundred,
                                const std::string& batch_label);
std::string python_meta_pickle(const std::vector<std::string>& names,
                               const std::vector<std::string>& coarse_names, bool hundred);

}  // namespace ltfit::layouts::cifar
