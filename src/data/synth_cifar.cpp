// The synthetic set in CIFAR's layouts (synth_draw.h): each drawn image shrunk to 32×32 with
// area averaging and written twice, as the CIFAR archives hold it: the binary version (records
// of label byte(s) and R, G, B planes, layout_cifar.cpp) and the Python version (pickled dicts
// of a NumPy array, as Python 2's cPickle wrote the published files, layout_cifar_python.cpp).
// Thread-safe: no shared state.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "data/cifar_records.h"
#include "data/synth_draw.h"
#include "ltfit/util/atomic_file.h"
#include "ltfit/util/error.h"

namespace ltfit {
namespace {

namespace fs = std::filesystem;

constexpr int kCifarSide = 32;
constexpr int kCifar10TrainBatches = 5;

// Coarse names for CIFAR-100's superclass label, one per class of the task.
std::array<const char*, 2> coarse_names(const std::array<const char*, 2>& classes) {
  if (std::string(classes[0]) == "bear") return {"large_omnivores", "small_mammals"};
  return {"felines", "canines"};
}

}  // namespace

std::string cifar_planes(const cv::Mat& image) {
  std::string out;
  cv::Mat small;
  cv::resize(image, small, cv::Size(kCifarSide, kCifarSide), 0, 0, cv::INTER_AREA);
  for (int channel : {2, 1, 0}) {  // BGR -> the R, G, B planes
    for (int y = 0; y < kCifarSide; ++y) {
      const auto* row = small.ptr<cv::Vec3b>(y);
      for (int x = 0; x < kCifarSide; ++x) out += static_cast<char>(row[x][channel]);
    }
  }
  return out;
}

namespace {

// The binary records of images [begin, end): the label byte(s), then the planes. CIFAR-100's
// coarse label is the class's own number (one superclass per class).
std::string records_of(const std::vector<CifarSynthImage>& images, std::size_t begin,
                       std::size_t end, bool cifar100) {
  std::string out;
  for (std::size_t i = begin; i < end; ++i) {
    if (cifar100) out += static_cast<char>(images[i].label);
    out += static_cast<char>(images[i].label);
    out += images[i].planes;
  }
  return out;
}

std::string lines_of(const std::array<const char*, 2>& names) {
  return std::string(names[0]) + "\n" + names[1] + "\n";
}

void make_folder(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw DataError("cannot create directory '" + dir.string() + "'" +
                        (ec ? ": " + ec.message() : std::string(" (a file is in the way)")),
                    "choose another --out directory, or check its permissions");
  }
}

// The batch pickle of images [begin, end), named "synth_<i>.png".
std::string python_batch(const std::vector<CifarSynthImage>& images, std::size_t begin,
                         std::size_t end, bool cifar100, const std::string& batch_label) {
  std::vector<std::int64_t> labels;
  std::vector<std::string> files;
  std::string planes;
  for (std::size_t i = begin; i < end; ++i) {
    labels.push_back(images[i].label);
    files.push_back("synth_" + std::to_string(i) + ".png");
    planes += images[i].planes;
  }
  return layouts::cifar::python_batch_pickle(labels, planes, files, cifar100, batch_label);
}

std::string python_meta(const std::array<const char*, 2>& classes, bool cifar100) {
  const auto coarse = coarse_names(classes);
  return layouts::cifar::python_meta_pickle({classes[0], classes[1]}, {coarse[0], coarse[1]},
                                            cifar100);
}

// The Python version beside the binary one: cifar-10-batches-py or cifar-100-python.
void write_python_batches(const fs::path& out, const std::array<const char*, 2>& classes,
                          const std::vector<CifarSynthImage>& train,
                          const std::vector<CifarSynthImage>& test, bool cifar100) {
  const fs::path dir = out / (cifar100 ? "cifar-100-python" : "cifar-10-batches-py");
  make_folder(dir);
  if (cifar100) {
    write_file_atomic((dir / "train").string(),
                      python_batch(train, 0, train.size(), true, "training batch 1 of 1"));
    write_file_atomic((dir / "test").string(),
                      python_batch(test, 0, test.size(), true, "testing batch 1 of 1"));
    write_file_atomic((dir / "meta").string(), python_meta(classes, true));
    return;
  }
  const std::size_t batches = std::min<std::size_t>(kCifar10TrainBatches, train.size());
  for (std::size_t b = 0; b < batches; ++b) {
    const std::string label =
        "training batch " + std::to_string(b + 1) + " of " + std::to_string(batches);
    write_file_atomic((dir / ("data_batch_" + std::to_string(b + 1))).string(),
                      python_batch(train, train.size() * b / batches,
                                   train.size() * (b + 1) / batches, false, label));
  }
  write_file_atomic((dir / "test_batch").string(),
                    python_batch(test, 0, test.size(), false, "testing batch 1 of 1"));
  write_file_atomic((dir / "batches.meta").string(), python_meta(classes, false));
}

}  // namespace

void write_cifar_batches(const SynthOptions& options, const std::array<const char*, 2>& classes,
                         const std::vector<CifarSynthImage>& train,
                         const std::vector<CifarSynthImage>& test) {
  const bool cifar100 = options.layout == "cifar100";
  write_python_batches(options.out_dir, classes, train, test, cifar100);
  const fs::path dir =
      fs::path(options.out_dir) / (cifar100 ? "cifar-100-binary" : "cifar-10-batches-bin");
  make_folder(dir);
  if (cifar100) {
    write_file_atomic((dir / "train.bin").string(), records_of(train, 0, train.size(), true));
    write_file_atomic((dir / "test.bin").string(), records_of(test, 0, test.size(), true));
    write_text_atomic((dir / "fine_label_names.txt").string(), lines_of(classes));
    write_text_atomic((dir / "coarse_label_names.txt").string(), lines_of(coarse_names(classes)));
    return;
  }
  // The training images spread over five batches as evenly as they go (the archive's 10,000
  // each); fewer than five images fill as many batches, from data_batch_1.bin on.
  const std::size_t batches = std::min<std::size_t>(kCifar10TrainBatches, train.size());
  for (std::size_t b = 0; b < batches; ++b) {
    const std::size_t begin = train.size() * b / batches;
    const std::size_t end = train.size() * (b + 1) / batches;
    write_file_atomic((dir / ("data_batch_" + std::to_string(b + 1) + ".bin")).string(),
                      records_of(train, begin, end, false));
  }
  write_file_atomic((dir / "test_batch.bin").string(), records_of(test, 0, test.size(), false));
  write_text_atomic((dir / "batches.meta.txt").string(), lines_of(classes));
}

}  // namespace ltfit
