// Fuzz target: the cifar10 and cifar100 layouts' readers of CIFAR's binary batch files
// (src/data/layout_cifar.cpp) and of its Python version's pickles (layout_cifar_python.cpp,
// numpy_pickle.cpp, the pickle machine).
//
// The input is a folder's files: its first byte picks CIFAR-10 (bit 0 clear) or CIFAR-100 (set),
// and the binary version (bit 1 clear) or the Python one (set). Binary: the bytes up to the first
// NUL after it are the class-names file (batches.meta.txt, or fine_label_names.txt and
// coarse_label_names.txt), the rest the training batch; the test batch is the training batch's
// first half (whole records or not). Python: a 4-byte little-endian length, that many bytes of
// meta pickle (batches.meta or meta), the rest the training batch's pickle (data_batch_1 or
// train), also written as the test batch. A malformed folder must end in
// DataError and nothing else. Findings, besides crashes, sanitizer reports and memory beyond the
// files' size: an accepted index whose classes are not sorted and unique, a label outside them,
// a sample without its held image or one whose image lies outside its block, or a split whose
// record count is not its files' bytes over the record size.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>

#include "data/layouts.h"
#include "fuzz_checks.h"
#include "ltfit/util/error.h"
#include "targets.h"

namespace ltfit::fuzz {

namespace {

namespace fs = std::filesystem;

// One folder for the process, emptied and refilled for each input.
const fs::path& work_folder() {
  static const fs::path folder = [] {
    std::string pattern = (fs::temp_directory_path() / "ltfit-fuzz-cifar-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) invariant_failed("cannot create a temp folder");
    return fs::path(pattern);
  }();
  return folder;
}

void write(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) invariant_failed("cannot write a fuzz input file");
}

void check_classes(const DatasetIndex& index) {
  if (!std::is_sorted(index.classes.begin(), index.classes.end()) ||
      std::adjacent_find(index.classes.begin(), index.classes.end()) != index.classes.end()) {
    invariant_failed("classes not sorted and unique");
  }
}

// `batch_bytes` SIZE_MAX: the record count is not checked.
void check_split(const std::vector<Sample>& samples, const DatasetIndex& index,
                 std::size_t batch_bytes, std::size_t record) {
  if (batch_bytes != SIZE_MAX && samples.size() != batch_bytes / record) {
    invariant_failed("records != bytes / record size");
  }
  for (const Sample& s : samples) {
    if (s.label < 0 || static_cast<std::size_t>(s.label) >= index.classes.size()) {
      invariant_failed("a label outside the classes");
    }
    const SampleImage& image = s.image;
    if (!image || image.width != 32 || image.height != 32) invariant_failed("no 32x32 image");
    if (image.offset > image.block->size() || image.bytes() > image.block->size() - image.offset) {
      invariant_failed("an image outside its block");
    }
    // Read the image's first and last byte (AddressSanitizer sees an out-of-range view).
    volatile std::uint8_t sink = image.data()[0];
    sink = image.data()[image.bytes() - 1];
    (void)sink;
  }
}

// The work folder, emptied for the next input's files.
const fs::path& emptied_work_folder() {
  const fs::path& dir = work_folder();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) fs::remove(entry.path(), ec);
  return dir;
}

// The layout's index of the work folder, with its classes checked; nullopt (noted) when the
// reader refused the files with a DataError.
std::optional<DatasetIndex> index_folder(bool hundred) {
  DataConfig data;
  data.root = work_folder().string();
  DatasetIndex index;
  try {
    index = hundred ? layouts::index_cifar100_layout(data, 0, false)
                    : layouts::index_cifar10_layout(data, 0, false);
  } catch (const DataError& e) {
    note_refusal(e.what());
    return std::nullopt;
  }
  check_classes(index);
  return index;
}

// The Python version's folder: the index's splits are checked, not their sizes.
Outcome run_cifar_python(std::string_view input, bool hundred) {
  if (input.size() < 4) return Outcome::kRefused;
  std::size_t meta_size = 0;
  for (int i = 3; i >= 0; --i) meta_size = meta_size * 256 + static_cast<unsigned char>(input[i]);
  input.remove_prefix(4);
  const std::string_view meta = input.substr(0, std::min(meta_size, input.size()));
  const std::string_view batch = input.substr(meta.size());
  const fs::path& dir = emptied_work_folder();
  write(dir / (hundred ? "meta" : "batches.meta"), meta);
  write(dir / (hundred ? "train" : "data_batch_1"), batch);
  write(dir / (hundred ? "test" : "test_batch"), batch);
  const std::optional<DatasetIndex> index = index_folder(hundred);
  if (!index) return Outcome::kRefused;
  check_split(index->train, *index, SIZE_MAX, 1);
  if (index->valid.size() != index->train.size())
    invariant_failed("the same batch read twice differs");
  return Outcome::kAccepted;
}

}  // namespace

Outcome run_cifar(std::string_view input) {
  if (input.empty()) return Outcome::kRefused;
  const auto flags = static_cast<unsigned char>(input[0]);
  const bool hundred = (flags & 1U) != 0;
  input.remove_prefix(1);
  if ((flags & 2U) != 0) return run_cifar_python(input, hundred);
  const std::size_t nul = input.find('\0');
  const std::string_view names = input.substr(0, nul);
  const std::string_view batch = nul == std::string_view::npos ? "" : input.substr(nul + 1);
  const std::string_view test = batch.substr(0, batch.size() / 2);
  const fs::path& dir = emptied_work_folder();
  write(dir / (hundred ? "fine_label_names.txt" : "batches.meta.txt"), names);
  if (hundred) write(dir / "coarse_label_names.txt", names);
  write(dir / (hundred ? "train.bin" : "data_batch_1.bin"), batch);
  write(dir / (hundred ? "test.bin" : "test_batch.bin"), test);
  const std::optional<DatasetIndex> index = index_folder(hundred);
  if (!index) return Outcome::kRefused;
  const std::size_t record = hundred ? 3074 : 3073;
  check_split(index->train, *index, batch.size(), record);
  check_split(index->valid, *index, test.size(), record);
  return Outcome::kAccepted;
}

}  // namespace ltfit::fuzz
