// CIFAR's Python version (cifar_records.h): the pickles torchvision's CIFAR10/CIFAR100 and Keras
// download (cifar-10-batches-py: data_batch_1 to data_batch_5, test_batch, batches.meta;
// cifar-100-python: train, test, meta). Each batch is a pickled dict whose 'data' is an N×3072
// uint8 NumPy array (a record's R, G and B planes) and whose 'labels' (CIFAR-100: 'fine_labels'
// and 'coarse_labels') list N class numbers; the meta dict lists the class names
// ('label_names'; 'fine_label_names', 'coarse_label_names'). The published files were pickled by
// Python 2 (keys and names are byte strings); files re-saved by Python 3 or NumPy 2 are read too
// (numpy_pickle.h says which globals, and that none is run).
//
// A file is read whole (at most kMaxBatchFileBytes) and unpickled within a budget of 64 MiB plus
// twice its size (read_limits.h), so a crafted file cannot take more memory than that. Pure
// functions, thread-safe.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "data/cifar_records.h"
#include "data/numpy_pickle.h"
#include "ltfit/formats/pickle.h"
#include "ltfit/util/error.h"
#include "ltfit/util/read_limits.h"

namespace ltfit::layouts::cifar {

namespace {

namespace fs = std::filesystem;
using pickle::PickleValue;
using Kind = PickleValue::Kind;

constexpr int kCifar10TrainBatches = 5;

struct PythonFormat {
  DataLayout layout;
  std::vector<std::string> train_files;
  std::string test_file;
  std::string meta_file;
  std::string names_key;   // in the meta dict
  std::string labels_key;  // in each batch's dict
};

PythonFormat python_format(const DataConfig& data, bool hundred) {
  if (!hundred) {
    std::vector<std::string> train;
    for (int b = 1; b <= kCifar10TrainBatches; ++b)
      train.push_back("data_batch_" + std::to_string(b));
    return {DataLayout::kCifar10, train, "test_batch", "batches.meta", "label_names", "labels"};
  }
  const bool coarse = data.cifar_label == CifarLabel::kCoarse;
  return {DataLayout::kCifar100,
          {"train"},
          "test",
          "meta",
          coarse ? "coarse_label_names" : "fine_label_names",
          coarse ? "coarse_labels" : "fine_labels"};
}

bool is_file(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

std::string expected_words(const PythonFormat& format) {
  return "a pickled dict as CIFAR's Python version holds (" + layout_words(format.layout) + ")";
}

[[noreturn]] void refuse(const fs::path& path, const PythonFormat& format,
                         const std::string& what) {
  throw DataError("'" + path.string() + "' is not " + expected_words(format) + ": " + what,
                  std::string("restore it from the CIFAR archive (") +
                      (format.layout == DataLayout::kCifar100 ? "cifar-100-python.tar.gz"
                                                              : "cifar-10-python.tar.gz") +
                      "), or use the binary version");
}

// A file's dict, unpickled within its budget; DataError naming the file otherwise.
std::unique_ptr<pickle::Unpickled> read_dict(const fs::path& path, const PythonFormat& format) {
  std::uint64_t size = 0;
  const FileHandle file = open_data_file(path, &size, format.layout);
  if (size > kMaxBatchFileBytes) {
    refuse(path, format,
           std::to_string(size) + " bytes, more than the " + std::to_string(kMaxBatchFileBytes) +
               " a batch may have");
  }
  std::string bytes(static_cast<std::size_t>(size), '\0');
  if (read_at(file.get(), path.string(), 0, bytes.size(),
              reinterpret_cast<std::uint8_t*>(bytes.data())) != bytes.size()) {
    refuse(path, format, "it ended early (it changed while being read?)");
  }
  std::unique_ptr<pickle::Unpickled> tree;
  try {
    ReadBudget budget(default_read_limits(size).max_bytes);
    tree = read_numpy_pickle(bytes, budget);
  } catch (const pickle::PickleError& e) {
    refuse(path, format, e.what());
  } catch (const LimitError& e) {
    refuse(path, format, e.what());
  }
  if (tree->root().kind != Kind::kDict) {
    refuse(path, format, std::string("it holds a ") + pickle::kind_name(tree->root().kind));
  }
  return tree;
}

const PickleValue& entry(const PickleValue& dict, const std::string& key, const fs::path& path,
                         const PythonFormat& format) {
  const PickleValue* value = pickle::find_entry(dict, key);
  if (value == nullptr) refuse(path, format, "it has no '" + key + "' entry");
  return *value;
}

std::vector<std::string> class_names(const fs::path& dir, const PythonFormat& format) {
  const fs::path path = dir / format.meta_file;
  const auto tree = read_dict(path, format);
  const PickleValue& list = entry(tree->root(), format.names_key, path, format);
  if (list.kind != Kind::kList) refuse(path, format, "'" + format.names_key + "' is not a list");
  std::vector<std::string> names;
  for (const auto& item : list.items) {
    if (item->kind != Kind::kString) {
      refuse(path, format, "'" + format.names_key + "' holds a " + pickle::kind_name(item->kind));
    }
    names.push_back(item->text);
  }
  check_class_names(names, path, format.layout);
  return names;
}

// The class numbers in `labels` (a list of ints or a 1-D integer array; -1 for an item that is
// not an int), or none when it is neither.
std::vector<std::int64_t> raw_labels(const PickleValue& labels) {
  std::vector<std::int64_t> raws;
  if (labels.kind == Kind::kList) {
    for (const auto& item : labels.items)
      raws.push_back(item->kind == Kind::kInt ? item->integer : -1);
  } else if (labels.kind == Kind::kTensor && labels.tensor.dim() == 1 &&
             !labels.tensor.is_floating_point() && labels.tensor.scalar_type() != torch::kBool) {
    const torch::Tensor numbers = labels.tensor.to(torch::kInt64).contiguous();
    raws.assign(numbers.data_ptr<std::int64_t>(),
                numbers.data_ptr<std::int64_t>() + numbers.numel());
  }
  return raws;
}

// Appends the records of the batch `path` to `out`.
void read_batch(const fs::path& path, const PythonFormat& format,
                const std::vector<std::int64_t>& rank, Records& out) {
  const auto tree = read_dict(path, format);
  const PickleValue& data = entry(tree->root(), "data", path, format);
  const PickleValue& labels = entry(tree->root(), format.labels_key, path, format);
  const bool images = data.kind == Kind::kTensor && data.tensor.scalar_type() == torch::kUInt8 &&
                      data.tensor.dim() >= 1 && data.tensor.size(0) > 0 &&
                      data.tensor.numel() == data.tensor.size(0) * std::int64_t(kPixelBytes);
  if (!images) {
    refuse(path, format,
           "its 'data' is not an N×3072 uint8 array (N > 0 records of 32×32 R, G, B)");
  }
  const auto count = static_cast<std::size_t>(data.tensor.size(0));
  const std::vector<std::int64_t> raws = raw_labels(labels);
  if (raws.size() != count) {
    refuse(path, format,
           "'" + format.labels_key + "' should list " + std::to_string(count) +
               " class numbers, one per row of 'data'");
  }
  const auto* pixels = data.tensor.data_ptr<std::uint8_t>();
  out.pixels->reserve(out.pixels->size() + count * kPixelBytes);
  const std::string base = path.string() + "#";
  for (std::size_t i = 0; i < count; ++i) {
    const std::int64_t raw = raws[i];
    if (raw < 0 || static_cast<std::size_t>(raw) >= rank.size()) {
      throw DataError("'" + path.string() + "' record " + std::to_string(i) + ": label " +
                          std::to_string(raw) + ", but the meta file names only " +
                          std::to_string(rank.size()) + " classes",
                      "the class names and the batches do not belong together: restore both "
                      "from the same archive");
    }
    append_record(out, pixels + i * kPixelBytes, rank[std::size_t(raw)], base + std::to_string(i));
  }
}

std::vector<Sample> read_split(const std::vector<fs::path>& files, const PythonFormat& format,
                               const std::vector<std::int64_t>& rank) {
  Records records;
  for (const fs::path& path : files) read_batch(path, format, rank, records);
  return to_samples(std::move(records));
}

}  // namespace

fs::path python_folder(const DataConfig& data, bool hundred) {
  const PythonFormat format = python_format(data, hundred);
  const fs::path root(data.root);
  for (const fs::path& dir :
       {root, root / (hundred ? "cifar-100-python" : "cifar-10-batches-py")}) {
    if (is_file(dir / format.train_files.front()) && is_file(dir / format.test_file)) return dir;
  }
  return {};
}

DatasetIndex index_python(const DataConfig& data, const fs::path& dir, bool hundred) {
  const PythonFormat format = python_format(data, hundred);
  DatasetIndex index;
  index.layout = data_layout_name(format.layout);
  const std::vector<std::int64_t> rank = number_classes(class_names(dir, format), index);
  // The training batches present, in order (a rehearsal set may have fewer than five).
  std::vector<fs::path> train;
  for (const std::string& name : format.train_files) {
    if (!is_file(dir / name)) break;
    train.push_back(dir / name);
  }
  index.train = read_split(train, format, rank);
  index.valid = read_split({dir / format.test_file}, format, rank);
  index.split = "test_batch";
  return index;
}

}  // namespace ltfit::layouts::cifar
