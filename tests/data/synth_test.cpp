// Tests of the synthetic image set: determinism by seed, the four layouts and their counts (the
// csv layout's labels.csv read back with the project's CSV reader), image sizes, that the two
// classes share colour statistics while differing in content, and the multi-label shapes task.
#include "ltfit/data/synth.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "ltfit/data/csv_table.h"
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

// The regular files under `dir`, relative to it, sorted.
std::vector<std::string> synth_files_under(const fs::path& dir) {
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(fs::relative(entry.path(), dir).string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// A space-separated label set as a vector, in its order.
std::vector<std::string> synth_split_labels(const std::string& labels) {
  std::istringstream in(labels);
  std::vector<std::string> out;
  for (std::string label; in >> label;) out.push_back(label);
  return out;
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

TEST_CASE("synth: csv layout lists every image with its label and split", "[data][synth]") {
  TempDir dir;
  auto o = small_options(dir.path());
  o.layout = "csv";
  const auto result = ltfit::write_synthetic_dataset(o);
  CHECK(result.train_written == 5);
  CHECK(result.valid_written == 3);
  const ltfit::CsvTable table = ltfit::read_csv_file((dir.path() / "labels.csv").string());
  CHECK(table.header == std::vector<std::string>{"fname", "labels", "is_valid"});
  REQUIRE(table.rows.size() == 8);
  const std::vector<std::string> labels = {"cat", "cat", "cat", "dog", "dog", "cat", "cat", "dog"};
  for (size_t i = 0; i < table.rows.size(); ++i) {
    const auto& row = table.rows[i];
    CHECK(row[0] == "images/0000" + std::to_string(i) + ".jpg");
    CHECK(row[1] == labels[i]);
    CHECK(row[2] == (i < 5 ? "False" : "True"));
    const cv::Mat image = cv::imread((dir.path() / row[0]).string(), cv::IMREAD_COLOR);
    CHECK_FALSE(image.empty());
  }
  // Nothing but the images and labels.csv; the images are the folders layout's.
  CHECK(synth_files_under(dir.path()).size() == 9);
  TempDir folders;
  ltfit::write_synthetic_dataset(small_options(folders.path()));
  CHECK(read_file(dir.path() / "images" / "00006.jpg") ==
        read_file(folders.path() / "valid" / "cat" / "00001.jpg"));
  CHECK(read_file(dir.path() / "images" / "00004.jpg") ==
        read_file(folders.path() / "train" / "dog" / "00001.jpg"));
}

TEST_CASE("synth: csv layout and shapes task: same seed, same bytes, another seed differs",
          "[data][synth]") {
  TempDir a, b, c;
  for (const auto* dir : {&a, &b, &c}) {
    auto o = small_options(dir->path(), dir == &c ? 8 : 7);
    o.layout = "csv";
    o.task = "shapes";
    ltfit::write_synthetic_dataset(o);
  }
  const auto files = synth_files_under(a.path());
  REQUIRE(files.size() == 10);  // 8 images, labels.csv and its sidecar (the label delimiter)
  CHECK_THAT(read_file(a.path() / "labels.csv.json"), Catch::Contains("\"label_delim\": \" \""));
  CHECK(files == synth_files_under(b.path()));
  for (const auto& file : files) CHECK(read_file(a.path() / file) == read_file(b.path() / file));
  CHECK(read_file(a.path() / "images" / "00000.jpg") !=
        read_file(c.path() / "images" / "00000.jpg"));
  CHECK(read_file(a.path() / "labels.csv") != read_file(c.path() / "labels.csv"));
}

TEST_CASE("synth: pattern layout names each image <class>_<N>.jpg in one folder", "[data][synth]") {
  TempDir dir;
  auto o = small_options(dir.path());
  o.layout = "pattern";
  o.task = "bears_rabbits";
  const auto result = ltfit::write_synthetic_dataset(o);
  CHECK(result.train_written == 8);
  CHECK(result.valid_written == 0);
  const std::vector<std::string> expected = {
      "images/bear_0.jpg", "images/bear_1.jpg",   "images/bear_2.jpg",   "images/bear_3.jpg",
      "images/bear_4.jpg", "images/rabbit_0.jpg", "images/rabbit_1.jpg", "images/rabbit_2.jpg"};
  CHECK(synth_files_under(dir.path()) == expected);
  const std::regex label_pattern(R"(^(.+)_\d+\.jpg$)");  // data.label_pattern's default
  std::set<std::string> classes;
  for (const auto& entry : fs::directory_iterator(dir.path() / "images")) {
    std::smatch match;
    const std::string name = entry.path().filename().string();
    REQUIRE(std::regex_match(name, match, label_pattern));
    classes.insert(match[1]);
  }
  CHECK(classes == std::set<std::string>{"bear", "rabbit"});
  // Same images as the kaggle layout, just named differently.
  TempDir kaggle;
  o = small_options(kaggle.path());
  o.layout = "kaggle";
  o.task = "bears_rabbits";
  ltfit::write_synthetic_dataset(o);
  CHECK(read_file(dir.path() / "images" / "rabbit_1.jpg") ==
        read_file(kaggle.path() / "train" / "rabbit.1.jpg"));
}

TEST_CASE("synth: shapes are a multi-label task, each shape in about half of the images",
          "[data][synth]") {
  TempDir dir;
  auto o = small_options(dir.path(), 11);
  o.layout = "csv";
  o.task = "shapes";
  o.train = 160;
  o.valid = 40;
  o.min_side = 40;
  o.max_side = 56;
  const auto result = ltfit::write_synthetic_dataset(o);
  CHECK(result.train_written == 160);
  CHECK(result.valid_written == 40);
  const ltfit::CsvTable table = ltfit::read_csv_file((dir.path() / "labels.csv").string());
  REQUIRE(table.rows.size() == 200);
  const std::vector<std::string> names = {"circle", "square", "triangle", "star"};
  std::map<std::string, int> counts;
  int none = 0, all = 0, valid = 0;
  for (const auto& row : table.rows) {
    const auto labels = synth_split_labels(row[1]);
    std::vector<std::string> in_order;  // each name at most once, in `names`' order
    for (const auto& name : names) {
      if (std::count(labels.begin(), labels.end(), name) == 1) in_order.push_back(name);
    }
    CHECK(labels == in_order);
    for (const auto& label : labels) ++counts[label];
    none += labels.empty() ? 1 : 0;
    all += labels.size() == names.size() ? 1 : 0;
    valid += row[2] == "True" ? 1 : 0;
  }
  CHECK(valid == 40);
  CHECK(counts.size() == names.size());
  for (const auto& name : names) {
    INFO(name);
    CHECK(counts[name] >= 76);  // 200 × 0.5 ± 3.4 standard deviations
    CHECK(counts[name] <= 124);
  }
  CHECK(none >= 3);  // expected 12.5 of 200
  CHECK(all >= 3);
  for (int i : {0, 57, 199}) {
    const cv::Mat image = cv::imread((dir.path() / table.rows[i][0]).string(), cv::IMREAD_COLOR);
    REQUIRE_FALSE(image.empty());
    CHECK(image.cols >= 40);
    CHECK(image.cols <= 56);
  }
}

TEST_CASE("synth: the shapes task needs the csv layout", "[data][synth]") {
  TempDir dir;
  for (const char* layout : {"folders", "kaggle", "pattern"}) {
    auto o = small_options(dir.path() / layout);
    o.layout = layout;
    o.task = "shapes";
    INFO(layout);
    try {
      ltfit::write_synthetic_dataset(o);
      FAIL("expected a ConfigError");
    } catch (const ltfit::ConfigError& e) {
      const std::string message = e.what();
      CHECK(message.find("--task shapes") != std::string::npos);
      CHECK(message.find("--layout csv") != std::string::npos);
    }
    CHECK_FALSE(fs::exists(dir.path() / layout));  // refused before anything is written
  }
}
