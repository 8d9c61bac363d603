// The synthetic set in CIFAR's binary layouts (synth_draw.h): each drawn image shrunk to 32×32
// with area averaging, written as a record of label byte(s) and R, G, B planes, the files as
// layout_cifar.cpp reads them and the CIFAR archives hold them. Thread-safe: no shared state.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <opencv2/imgproc.hpp>

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

// `image`'s record: the label bytes, then its 32×32 red, green and blue planes.
void append_record(std::string& out, const CifarSynthImage& image, bool cifar100) {
  if (cifar100) out += static_cast<char>(image.label);  // coarse: one superclass per class
  out += static_cast<char>(image.label);
  cv::Mat small;
  cv::resize(image.image, small, cv::Size(kCifarSide, kCifarSide), 0, 0, cv::INTER_AREA);
  for (int channel : {2, 1, 0}) {  // BGR -> the R, G, B planes
    for (int y = 0; y < kCifarSide; ++y) {
      const auto* row = small.ptr<cv::Vec3b>(y);
      for (int x = 0; x < kCifarSide; ++x) out += static_cast<char>(row[x][channel]);
    }
  }
}

std::string records_of(const std::vector<CifarSynthImage>& images, std::size_t begin,
                       std::size_t end, bool cifar100) {
  std::string out;
  for (std::size_t i = begin; i < end; ++i) append_record(out, images[i], cifar100);
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

}  // namespace

void write_cifar_batches(const SynthOptions& options, const std::array<const char*, 2>& classes,
                         const std::vector<CifarSynthImage>& train,
                         const std::vector<CifarSynthImage>& test) {
  const bool cifar100 = options.layout == "cifar100";
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
