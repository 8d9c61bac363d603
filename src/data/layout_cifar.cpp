// The cifar10 and cifar100 layouts (layouts.h): CIFAR's binary batch files, as
// https://www.cs.toronto.edu/~kriz/cifar.html describes them, and the records both versions
// share (cifar_records.h); the Python version is layout_cifar_python.cpp's. A record is a label
// byte (CIFAR-100: a coarse, then a fine one) and a 32×32 image as 1,024 red, 1,024 green and 1,024
// blue bytes, rows top to bottom. CIFAR-10's folder (cifar-10-batches-bin) holds data_batch_1.bin
// to data_batch_5.bin (training) and test_batch.bin, its class names in batches.meta.txt;
// CIFAR-100's (cifar-100-binary) train.bin and test.bin, with fine_label_names.txt and
// coarse_label_names.txt.
//
// Every record's pixels are read once into one block per split, as RGB rows (HWC), which every
// sample's SampleImage views: no per-image files, no per-image allocations. A file is checked
// before anything is allocated for it: a regular file, a whole number of records, at most
// kMaxBatchFileBytes; so the memory taken is bounded by the files' own sizes. Labels are checked
// against the class names, which are numbered in sorted order as every layout's classes are.
// Pure functions, thread-safe.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "data/cifar_records.h"
#include "data/layouts.h"
#include "data/regular_file.h"
#include "ltfit/util/error.h"
#include "ltfit/util/utf8.h"

namespace ltfit::layouts {

namespace fs = std::filesystem;

namespace cifar {

void append_record(Records& records, const std::uint8_t* planes, std::int64_t label,
                   std::string name) {
  std::vector<std::uint8_t>& pixels = *records.pixels;
  const std::size_t at = pixels.size();
  pixels.resize(at + kPixelBytes);
  for (std::size_t p = 0; p < kPlaneBytes; ++p) {
    for (std::size_t c = 0; c < 3; ++c) pixels[at + p * 3 + c] = planes[c * kPlaneBytes + p];
  }
  records.labels.push_back(label);
  records.names.push_back(std::move(name));
}

std::vector<Sample> to_samples(Records records) {
  std::shared_ptr<const std::vector<std::uint8_t>> block = std::move(records.pixels);
  std::vector<Sample> samples;
  samples.reserve(records.labels.size());
  for (std::size_t i = 0; i < records.labels.size(); ++i) {
    samples.push_back({std::move(records.names[i]),
                       records.labels[i],
                       {},
                       {block, i * kPixelBytes, kSide, kSide}});
  }
  return samples;
}

std::string layout_words(DataLayout layout) { return "layout " + data_layout_name(layout); }

FileHandle open_data_file(const fs::path& path, std::uint64_t* size, DataLayout layout) {
  std::string error;
  FileHandle file(open_regular_file(path.string(), size, &error));
  if (file.get() < 0) {
    throw DataError("cannot read '" + path.string() + "' (" + layout_words(layout) + "): " + error,
                    "restore the file from the CIFAR archive, or set data.layout to the layout "
                    "of the data under data.root");
  }
  return file;
}

void check_class_names(const std::vector<std::string>& names, const fs::path& path,
                       DataLayout layout) {
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  const bool blank = std::find(names.begin(), names.end(), "") != names.end();
  const bool repeated = std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end();
  // A class name goes into checkpoints, CSVs, JSON and captions: UTF-8 text, no control bytes.
  const bool garbled = std::any_of(names.begin(), names.end(), [](const std::string& name) {
    return !is_valid_utf8(name) || std::any_of(name.begin(), name.end(), [](char c) {
      return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
  });
  if (names.size() < 2 || names.size() > kMaxClasses || blank || repeated || garbled) {
    throw DataError("'" + path.string() + "' (" + layout_words(layout) +
                        ") should name the classes: 2 to 256 names of UTF-8 text, "
                        "none blank or repeated; it has " +
                        std::to_string(names.size()) + (blank ? ", a blank one among them" : "") +
                        (repeated ? ", a name repeated" : "") +
                        (garbled ? ", a name that is not text" : ""),
                    "restore it from the CIFAR archive");
  }
}

std::vector<std::int64_t> number_classes(const std::vector<std::string>& names,
                                         DatasetIndex& index) {
  index.classes = names;
  std::sort(index.classes.begin(), index.classes.end());
  std::vector<std::int64_t> rank(names.size());
  for (std::size_t raw = 0; raw < names.size(); ++raw) {
    rank[raw] = std::lower_bound(index.classes.begin(), index.classes.end(), names[raw]) -
                index.classes.begin();
  }
  return rank;
}

}  // namespace cifar

namespace {

using namespace cifar;

constexpr std::uint64_t kMaxNamesFileBytes = 1 << 16;
constexpr std::size_t kChunkRecords = 1024;  // records read at a time

struct CifarFormat {
  DataLayout layout;
  const char* folder;  // the archive's folder, looked for under data.root
  int label_bytes;     // 1 (CIFAR-10) or 2 (CIFAR-100: coarse, fine)
  std::vector<std::string> train_files;
  std::string test_file;
  std::string names_file;  // the class names of the label that trains
};

std::size_t record_bytes(const CifarFormat& format) {
  return static_cast<std::size_t>(format.label_bytes) + kPixelBytes;
}

CifarFormat cifar10_format() {
  return {DataLayout::kCifar10,
          "cifar-10-batches-bin",
          1,
          {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
           "data_batch_5.bin"},
          "test_batch.bin",
          "batches.meta.txt"};
}

CifarFormat cifar100_format(CifarLabel label) {
  return {DataLayout::kCifar100,
          "cifar-100-binary",
          2,
          {"train.bin"},
          "test.bin",
          label == CifarLabel::kCoarse ? "coarse_label_names.txt" : "fine_label_names.txt"};
}

bool is_file(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

// The folder holding the batches: data.root itself, or its archive folder; "" when neither has
// the first training batch and the test batch.
fs::path batch_folder(const DataConfig& data, const CifarFormat& format) {
  const fs::path root(data.root);
  for (const fs::path& dir : {root, root / format.folder}) {
    if (is_file(dir / format.train_files.front()) && is_file(dir / format.test_file)) return dir;
  }
  return {};
}

std::string layout_words(const CifarFormat& format) { return cifar::layout_words(format.layout); }

// The class names in `path`: one per line, trailing blanks and a final empty line ignored.
std::vector<std::string> read_class_names(const fs::path& path, const CifarFormat& format) {
  std::uint64_t size = 0;
  const FileHandle file = open_data_file(path, &size, format.layout);
  if (size > kMaxNamesFileBytes) {
    throw DataError("'" + path.string() + "' is " + std::to_string(size) +
                    " bytes, not a list of class names (at most " +
                    std::to_string(kMaxNamesFileBytes) + " bytes)");
  }
  std::string text(static_cast<std::size_t>(size), '\0');
  text.resize(read_at(file.get(), path.string(), 0, text.size(),
                      reinterpret_cast<std::uint8_t*>(text.data())));
  std::vector<std::string> names;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string name = text.substr(start, end - start);
    while (!name.empty() && (name.back() == '\r' || name.back() == ' ' || name.back() == '\t')) {
      name.pop_back();
    }
    names.push_back(std::move(name));
    start = end + 1;
  }
  while (!names.empty() && names.back().empty()) names.pop_back();
  check_class_names(names, path, format.layout);
  return names;
}

// A batch file, open, and its size.
struct BatchFile {
  fs::path path;
  FileHandle file;
  std::uint64_t size = 0;
};

// Opens and checks every file of a split before anything is allocated for its records.
std::vector<BatchFile> open_batches(const std::vector<fs::path>& files, const CifarFormat& format) {
  std::vector<BatchFile> batches;
  for (const fs::path& path : files) {
    std::uint64_t size = 0;
    FileHandle file = open_data_file(path, &size, format.layout);
    if (size == 0 || size > kMaxBatchFileBytes || size % record_bytes(format) != 0) {
      throw DataError("'" + path.string() + "' is " + std::to_string(size) +
                          " bytes, not a whole number of " + std::to_string(record_bytes(format)) +
                          "-byte records (" + layout_words(format) + ": " +
                          std::to_string(format.label_bytes) +
                          " label byte(s), then 3,072 pixel "
                          "bytes; at most " +
                          std::to_string(kMaxBatchFileBytes) + " bytes a file)",
                      "the file is truncated or of another format: restore it from the archive");
    }
    batches.push_back({path, std::move(file), size});
  }
  return batches;
}

// Appends `batch`'s records to `out`: the label byte at `label_at` mapped by `rank` (raw label
// -> sorted class index), the planes turned into RGB rows.
void read_records(const BatchFile& batch, const CifarFormat& format, int label_at,
                  const std::vector<std::int64_t>& rank, const fs::path& names_file, Records& out) {
  const fs::path& path = batch.path;
  const FileHandle& file = batch.file;
  const std::size_t record = record_bytes(format);
  const std::uint64_t count = batch.size / record;
  std::vector<std::uint8_t> chunk(std::min<std::uint64_t>(count, kChunkRecords) * record);
  const std::string base = path.string() + "#";
  for (std::uint64_t first = 0; first < count; first += kChunkRecords) {
    const std::uint64_t n = std::min<std::uint64_t>(kChunkRecords, count - first);
    const std::size_t want = static_cast<std::size_t>(n) * record;
    if (read_at(file.get(), path.string(), first * record, want, chunk.data()) != want) {
      throw DataError("'" + path.string() + "' ended before its record " + std::to_string(first) +
                      " (it changed while being read?)");
    }
    for (std::uint64_t k = 0; k < n; ++k) {
      const std::uint8_t* rec = chunk.data() + k * record;
      const std::uint8_t raw = rec[label_at];
      if (raw >= rank.size()) {
        throw DataError("'" + path.string() + "' record " + std::to_string(first + k) + ": label " +
                            std::to_string(raw) + ", but '" + names_file.string() +
                            "' names only " + std::to_string(rank.size()) + " classes",
                        "the class names and the batches do not belong together: restore both "
                        "from the same archive");
      }
      append_record(out, rec + format.label_bytes, rank[raw], base + std::to_string(first + k));
    }
  }
}

// One split as samples of the shared block.
std::vector<Sample> split_samples(const std::vector<fs::path>& files, const CifarFormat& format,
                                  int label_at, const std::vector<std::int64_t>& rank,
                                  const fs::path& names_file) {
  Records records;
  const std::vector<BatchFile> batches = open_batches(files, format);
  std::uint64_t count = 0;
  for (const BatchFile& batch : batches) count += batch.size / record_bytes(format);
  records.pixels->reserve(static_cast<std::size_t>(count) * kPixelBytes);
  records.labels.reserve(static_cast<std::size_t>(count));
  records.names.reserve(static_cast<std::size_t>(count));
  for (const BatchFile& batch : batches) {
    read_records(batch, format, label_at, rank, names_file, records);
  }
  return to_samples(std::move(records));
}

DatasetIndex index_cifar(const DataConfig& data, const CifarFormat& format, int label_at) {
  const fs::path dir = batch_folder(data, format);
  if (dir.empty()) {
    const bool hundred = format.layout == DataLayout::kCifar100;
    if (const fs::path py = python_folder(data, hundred); !py.empty()) {
      return index_python(data, py, hundred);
    }
    const fs::path root(data.root);
    throw DataError("no CIFAR batches (" + format.train_files.front() + " and " + format.test_file +
                        ") in '" + root.string() + "' or '" + (root / format.folder).string() +
                        "' (" + layout_words(format) + ")",
                    "point data.root at the folder a CIFAR archive (binary or Python version) "
                    "unpacks to, or run "
                    "`ltfit synth --layout " +
                        data_layout_name(format.layout) + " --out DIR` for a synthetic one");
  }
  const fs::path names_file = dir / format.names_file;
  const std::vector<std::string> names = read_class_names(names_file, format);
  DatasetIndex index;
  index.layout = data_layout_name(format.layout);
  const std::vector<std::int64_t> rank = number_classes(names, index);
  // The training batches present, in order (the archive has five; a rehearsal set may have
  // fewer).
  std::vector<fs::path> train;
  for (const std::string& name : format.train_files) {
    if (!is_file(dir / name)) break;
    train.push_back(dir / name);
  }
  index.train = split_samples(train, format, label_at, rank, names_file);
  index.valid = split_samples({dir / format.test_file}, format, label_at, rank, names_file);
  index.split = "test_batch";
  return index;
}

}  // namespace

bool has_cifar10_batches(const DataConfig& data) {
  return !batch_folder(data, cifar10_format()).empty() || !python_folder(data, false).empty();
}

bool has_cifar100_batches(const DataConfig& data) {
  return !batch_folder(data, cifar100_format(data.cifar_label)).empty() ||
         !python_folder(data, true).empty();
}

DatasetIndex index_cifar10_layout(const DataConfig& data, std::uint64_t /*seed*/,
                                  bool /*multi_label*/) {
  return index_cifar(data, cifar10_format(), 0);
}

DatasetIndex index_cifar100_layout(const DataConfig& data, std::uint64_t /*seed*/,
                                   bool /*multi_label*/) {
  return index_cifar(data, cifar100_format(data.cifar_label),
                     data.cifar_label == CifarLabel::kCoarse ? 0 : 1);
}

}  // namespace ltfit::layouts
