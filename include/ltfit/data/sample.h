// A dataset's sample and where its image is read from: the seam between the layouts that find
// samples (dataset_index.h: image files in folders, a CSV or a name pattern; records of CIFAR's
// batch files) and everything that reads them (the loader, the readable check, the decode cache,
// evaluation, TTA, interpret, split.csv and every CSV or JSON that names a sample).
//
// A sample is named by `path`: an image file's path, or, for a sample its source holds in memory
// or inside another file, a name that says where it came from ("data_batch_3.bin#417": record 417
// of that file; "train-000003.tar#cat_17.jpg": a member of that tar). Its image is that file;
// or `image`: pixels the source already decoded, a view into one block the source shares among
// its samples (a CIFAR set is one allocation, not 60,000); or `member`: the encoded bytes at a
// range of another file (a tar shard's member), decoded as a file's would be. Readers take an
// ImageInput, which a path or a sample converts to. Torch-free. Thread-safe: a SampleImage's
// block is never written after its source made it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ltfit {

// Decoded 8-bit RGB pixels a source holds: height × width × 3 bytes, row-major (HWC), at
// `offset` in `block`. Empty (no block): the sample is a file.
struct SampleImage {
  std::shared_ptr<const std::vector<std::uint8_t>> block;
  std::size_t offset = 0;
  int width = 0;
  int height = 0;

  explicit operator bool() const { return block != nullptr; }
  const std::uint8_t* data() const { return block->data() + offset; }
  std::size_t bytes() const {
    return static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3;
  }
  bool operator==(const SampleImage&) const = default;
};

// An image's encoded bytes inside another file: `size` bytes at `offset` of `file`. Empty (no
// file): the sample is a file of its own, or held pixels.
struct FileRange {
  std::shared_ptr<const std::string> file;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;

  explicit operator bool() const { return file != nullptr; }
  bool operator==(const FileRange&) const = default;
};

struct Sample {
  std::string path;    // the image file; for a sample held in memory, its name (see above)
  std::int64_t label;  // single-label: index into DatasetIndex::classes; multi-label: the first
                       // of `labels`, or -1 when the set is empty
  std::vector<std::int64_t> labels = {};  // multi-label only: sorted unique class indices (may
                                          // be empty); empty for single-label
  SampleImage image = {};                 // the pixels, when the source holds them
  FileRange member = {};                  // the bytes inside another file, when they are there
};

// Whether `sample` is an image file of its own (what clean --apply may move, a CSV may list).
inline bool is_image_file(const Sample& sample) { return !sample.image && !sample.member; }

// What a reader reads: the file at `path`; or, when `image` is set, those pixels; or, when
// `member` is set, those bytes of another file; or, when `encoded` is set, those encoded bytes
// held in memory (an image sent to `ltfit serve`). `path` then only names them in messages and
// caches.
struct ImageInput {
  ImageInput(std::string file) : path(std::move(file)) {}  // NOLINT(google-explicit-constructor)
  ImageInput(const char* file) : path(file) {}             // NOLINT(google-explicit-constructor)
  ImageInput(const std::filesystem::path& file)            // NOLINT(google-explicit-constructor)
      : path(file.string()) {}
  ImageInput(const Sample& sample)  // NOLINT(google-explicit-constructor)
      : path(sample.path), image(sample.image), member(sample.member) {}

  std::string path;
  SampleImage image;
  FileRange member;
  std::shared_ptr<const std::string> encoded;
};

}  // namespace ltfit
