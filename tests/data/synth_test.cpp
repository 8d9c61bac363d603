// Tests of the synthetic image set: determinism by seed, layouts and counts, image sizes, and
// that the two classes share colour statistics while differing in content.
#include "ltfit/data/synth.h"

#include <cmath>
#include <filesystem>

#include <catch2/catch.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using ltfit::SynthOptions;
using ltfit::testing::read_file;
using ltfit::testing::TempDir;

namespace {

SynthOptions small_options(const fs::path& out, std::uint64_t seed = 7) {
  SynthOptions o;
  o.out_dir = out.string();
  o.train = 5;
  o.valid = 3;
  o.seed = seed;
  o.min_side = 48;
  o.max_side = 80;
  return o;
}

int count_files(const fs::path& dir) {
  int n = 0;
  for (const auto& entry : fs::directory_iterator(dir)) n += entry.is_regular_file() ? 1 : 0;
  return n;
}

// Mean BGR of every image in `dir`, averaged over images.
cv::Scalar mean_colour(const fs::path& dir) {
  cv::Scalar sum;
  int n = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    sum += cv::mean(cv::imread(entry.path().string(), cv::IMREAD_COLOR));
    ++n;
  }
  return sum * (1.0 / n);
}

}  // namespace

TEST_CASE("synth: same seed gives identical bytes, another seed differs", "[data][synth]") {
  TempDir a, b, c;
  ltfit::write_synthetic_dataset(small_options(a.path(), 7));
  ltfit::write_synthetic_dataset(small_options(b.path(), 7));
  ltfit::write_synthetic_dataset(small_options(c.path(), 8));
  for (const char* file : {"train/cat/00000.jpg", "train/dog/00001.jpg", "valid/cat/00001.jpg"}) {
    const std::string bytes = read_file(a.path() / file);
    REQUIRE(!bytes.empty());
    CHECK(bytes == read_file(b.path() / file));
    CHECK(bytes != read_file(c.path() / file));
  }
}

TEST_CASE("synth: folders layout has balanced classes, cats get the odd image", "[data][synth]") {
  TempDir dir;
  const auto result = ltfit::write_synthetic_dataset(small_options(dir.path()));
  CHECK(result.train_written == 5);
  CHECK(result.valid_written == 3);
  CHECK(count_files(dir.path() / "train" / "cat") == 3);
  CHECK(count_files(dir.path() / "train" / "dog") == 2);
  CHECK(count_files(dir.path() / "valid" / "cat") == 2);
  CHECK(count_files(dir.path() / "valid" / "dog") == 1);
  CHECK(fs::exists(dir.path() / "train" / "cat" / "00002.jpg"));
  CHECK(fs::exists(dir.path() / "valid" / "dog" / "00000.jpg"));
}

TEST_CASE("synth: kaggle layout is flat, numbered per class from 0", "[data][synth]") {
  TempDir dir;
  auto options = small_options(dir.path());
  options.layout = "kaggle";
  const auto result = ltfit::write_synthetic_dataset(options);
  CHECK(result.train_written == 8);
  CHECK(result.valid_written == 0);
  CHECK(count_files(dir.path() / "train") == 8);
  CHECK_FALSE(fs::exists(dir.path() / "valid"));
  for (int i = 0; i < 5; ++i)
    CHECK(fs::exists(dir.path() / "train" / ("cat." + std::to_string(i) + ".jpg")));
  for (int i = 0; i < 3; ++i)
    CHECK(fs::exists(dir.path() / "train" / ("dog." + std::to_string(i) + ".jpg")));
  // Same images as the folders layout, just named differently.
  TempDir folders;
  ltfit::write_synthetic_dataset(small_options(folders.path()));
  CHECK(read_file(dir.path() / "train" / "dog.1.jpg") ==
        read_file(folders.path() / "train" / "dog" / "00001.jpg"));
}

TEST_CASE("synth: default sizes are 300-500 px per side with varied aspect ratios",
          "[data][synth]") {
  TempDir dir;
  SynthOptions o;
  o.out_dir = dir.str();
  o.train = 4;
  o.valid = 2;
  ltfit::write_synthetic_dataset(o);
  int non_square = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir.path())) {
    if (!entry.is_regular_file()) continue;
    CHECK(entry.path().extension() == ".jpg");
    const cv::Mat image = cv::imread(entry.path().string(), cv::IMREAD_COLOR);
    REQUIRE(!image.empty());
    CHECK(image.cols >= 300);
    CHECK(image.cols <= 500);
    CHECK(image.rows >= 300);
    CHECK(image.rows <= 500);
    non_square += image.cols != image.rows ? 1 : 0;
  }
  CHECK(non_square >= 4);
}

TEST_CASE("synth: classes share colour statistics but the images differ", "[data][synth]") {
  TempDir dir;
  SynthOptions o;
  o.out_dir = dir.str();
  o.train = 600;
  o.valid = 2;
  o.min_side = 40;
  o.max_side = 56;
  ltfit::write_synthetic_dataset(o);
  const cv::Scalar cats = mean_colour(dir.path() / "train" / "cat");
  const cv::Scalar dogs = mean_colour(dir.path() / "train" / "dog");
  for (int c = 0; c < 3; ++c) CHECK(std::abs(cats[c] - dogs[c]) < 6.0);
  const std::string cat = read_file(dir.path() / "train" / "cat" / "00000.jpg");
  CHECK(cat != read_file(dir.path() / "train" / "cat" / "00001.jpg"));
  CHECK(cat != read_file(dir.path() / "train" / "dog" / "00000.jpg"));
}

TEST_CASE("synth: bad options are config errors, unwritable output a data error", "[data][synth]") {
  TempDir dir;
  auto o = small_options(dir.path());
  o.train = 0;
  CHECK_THROWS_AS(ltfit::write_synthetic_dataset(o), ltfit::ConfigError);
  o = small_options(dir.path());
  o.valid = -1;
  CHECK_THROWS_AS(ltfit::write_synthetic_dataset(o), ltfit::ConfigError);
  o = small_options(dir.path());
  o.layout = "flat";
  CHECK_THROWS_AS(ltfit::write_synthetic_dataset(o), ltfit::ConfigError);
  o = small_options(dir.path());
  o.jpeg_quality = 101;
  CHECK_THROWS_AS(ltfit::write_synthetic_dataset(o), ltfit::ConfigError);
  o = small_options(dir.path());
  o.task = "birds";
  CHECK_THROWS_AS(ltfit::write_synthetic_dataset(o), ltfit::ConfigError);
  ltfit::testing::write_file(dir.path() / "blocker", "a file where a directory should go");
  o = small_options(dir.path() / "blocker");
  CHECK_THROWS_AS(ltfit::write_synthetic_dataset(o), ltfit::DataError);
}

TEST_CASE("synth: leaves no temporary files behind", "[data][synth]") {
  TempDir dir;
  ltfit::write_synthetic_dataset(small_options(dir.path()));
  for (const auto& entry : fs::recursive_directory_iterator(dir.path())) {
    CHECK(entry.path().filename().string()[0] != '.');
  }
}

TEST_CASE("synth: jpeg_quality sets the compression", "[data][synth]") {
  TempDir low, high;
  auto o = small_options(low.path());
  o.jpeg_quality = 10;
  ltfit::write_synthetic_dataset(o);
  o = small_options(high.path());
  o.jpeg_quality = 95;
  ltfit::write_synthetic_dataset(o);
  const fs::path file = fs::path("train") / "cat" / "00000.jpg";
  CHECK(fs::file_size(low.path() / file) * 2 < fs::file_size(high.path() / file));
}

TEST_CASE("synth: the bears_rabbits task has its own classes and images, same backgrounds",
          "[data][synth]") {
  TempDir cats_dogs, bears_rabbits;
  ltfit::write_synthetic_dataset(small_options(cats_dogs.path()));
  auto o = small_options(bears_rabbits.path());
  o.task = "bears_rabbits";
  ltfit::write_synthetic_dataset(o);
  CHECK(count_files(bears_rabbits.path() / "train" / "bear") == 3);
  CHECK(count_files(bears_rabbits.path() / "train" / "rabbit") == 2);
  CHECK(count_files(bears_rabbits.path() / "valid" / "rabbit") == 1);
  CHECK_FALSE(fs::exists(bears_rabbits.path() / "train" / "cat"));
  // Same seed, same background and size, different figure.
  const cv::Mat cat = cv::imread((cats_dogs.path() / "train/cat/00000.jpg").string());
  const cv::Mat bear = cv::imread((bears_rabbits.path() / "train/bear/00000.jpg").string());
  REQUIRE(!cat.empty());
  REQUIRE(!bear.empty());
  CHECK(cat.size() == bear.size());
  CHECK(cv::norm(cat, bear, cv::NORM_L1) > 0);
}
