// Tests of dataset indexing: every layout (folders and its shapes, kaggle, pattern, csv), auto
// detection, the deterministic splits (Kaggle's valid_count, fastai's valid_pct), skipping of
// non-images, the rows and files left out and noted, split.csv, and the messages of the data
// errors. "[.layout_oracle]" (run by tests/data/layout_oracle.sh, skipped visibly without fastai)
// hands the pattern layout's labels and split to fastai's own code.
#include "ltfit/data/dataset_index.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <set>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "data/index_test_support.h"
#include "ltfit/data/synth.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using ltfit::testing::data_error_message;
using ltfit::testing::index_data_config;
using ltfit::testing::sample_paths;
using ltfit::testing::TempDir;
using ltfit::testing::touch_index_file;
using ltfit::testing::write_file;

namespace {

// train/{cat,dog} and valid/{cat,dog} with a few distractors that must be skipped (and a
// directory named folder.jpg, indexed by name for the loader to skip and name).
void make_folders(const fs::path& root) {
  touch_index_file(root / "train" / "cat" / "a.jpg");
  touch_index_file(root / "train" / "cat" / "b.JPG");
  touch_index_file(root / "train" / "cat" / "notes.txt");
  touch_index_file(root / "train" / "cat" / ".hidden.jpg");
  fs::create_directories(root / "train" / "cat" / "folder.jpg");
  touch_index_file(root / "train" / "dog" / "c.png");
  touch_index_file(root / "valid" / "cat" / "d.jpeg");
  touch_index_file(root / "valid" / "dog" / "e.webp");
}

void make_kaggle(const fs::path& dir, int per_class) {
  for (int i = 0; i < per_class; ++i) {
    touch_index_file(dir / ("cat." + std::to_string(i) + ".jpg"));
    touch_index_file(dir / ("dog." + std::to_string(i) + ".jpg"));
  }
  touch_index_file(dir / "readme.txt");
  touch_index_file(dir / "1.jpg");  // Kaggle's unlabelled test naming: no class, skipped
}

}  // namespace

TEST_CASE("index: folders layout, classes sorted, non-images skipped", "[data][index]") {
  TempDir dir;
  make_folders(dir.path());
  for (const std::string layout : {"auto", "folders"}) {
    const auto index = ltfit::index_dataset(index_data_config(dir, layout), 1, false);
    CHECK(index.layout == "folders");
    CHECK(index.classes == std::vector<std::string>{"cat", "dog"});
    // The directory named folder.jpg is indexed by its name: the loader then skips, counts and
    // names it as unreadable rather than it vanishing here unreported.
    REQUIRE(index.train.size() == 4);
    CHECK(index.train[0].path == (dir.path() / "train" / "cat" / "a.jpg").string());
    CHECK(index.train[1].path == (dir.path() / "train" / "cat" / "b.JPG").string());
    CHECK(index.train[2].path == (dir.path() / "train" / "cat" / "folder.jpg").string());
    CHECK(index.train[3].path == (dir.path() / "train" / "dog" / "c.png").string());
    CHECK(index.train[0].label == 0);
    CHECK(index.train[3].label == 1);
    REQUIRE(index.valid.size() == 2);
    CHECK(index.valid[1].label == 1);
  }
}

TEST_CASE("index: kaggle layout split is sized, disjoint and deterministic", "[data][index]") {
  TempDir dir;
  make_kaggle(dir.path() / "train", 10);
  const auto index = ltfit::index_dataset(index_data_config(dir, "auto", 5), 42, false);
  CHECK(index.layout == "kaggle");
  CHECK(index.classes == std::vector<std::string>{"cat", "dog"});
  CHECK(index.valid.size() == 5);
  CHECK(index.train.size() == 15);
  const auto train = sample_paths(index.train), valid = sample_paths(index.valid);
  CHECK(std::is_sorted(train.begin(), train.end()));
  CHECK(std::is_sorted(valid.begin(), valid.end()));
  std::set<std::string> all(train.begin(), train.end());
  all.insert(valid.begin(), valid.end());
  CHECK(all.size() == 20);
  for (const auto& s : index.train) {
    CHECK(s.label == (fs::path(s.path).filename().string().rfind("cat", 0) == 0 ? 0 : 1));
  }
  CHECK(sample_paths(ltfit::index_dataset(index_data_config(dir, "kaggle", 5), 42, false).valid) ==
        valid);
  CHECK(sample_paths(ltfit::index_dataset(index_data_config(dir, "kaggle", 5), 43, false).valid) !=
        valid);
}

TEST_CASE("index: kaggle files directly in the root are found", "[data][index]") {
  TempDir dir;
  make_kaggle(dir.path(), 3);
  const auto index = ltfit::index_dataset(index_data_config(dir, "auto", 2), 0, false);
  CHECK(index.layout == "kaggle");
  CHECK(index.train.size() + index.valid.size() == 6);
}

TEST_CASE("index: flat <class>_<N>.jpg files with layout auto name data.layout: pattern",
          "[data][index]") {
  TempDir dir;
  for (const char* name : {"Abyssinian_1.jpg", "Abyssinian_2.jpg", "beagle_7.jpg"})
    ltfit::testing::write_file(dir.path() / name, "x");
  try {
    ltfit::index_dataset(index_data_config(dir, "auto"), 0, false);
    FAIL("flat files were indexed without a pattern");
  } catch (const ltfit::DataError& e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("3 image files") &&
                             Catch::Matchers::Contains("Abyssinian_1.jpg"));
    CHECK_THAT(e.hint(), Catch::Matchers::Contains("data.layout: pattern") &&
                             Catch::Matchers::Contains("data.label_pattern"));
  }
}

TEST_CASE("index: too large a validation count is a data error", "[data][index]") {
  TempDir dir;
  make_kaggle(dir.path(), 3);
  CHECK_THROWS_AS(ltfit::index_dataset(index_data_config(dir, "kaggle", 6), 0, false),
                  ltfit::DataError);
}

TEST_CASE("index: kaggle without data.valid_count draws data.valid_pct as every layout",
          "[data][index]") {
  TempDir dir;
  make_kaggle(dir.path(), 10);
  // Before, kaggle alone held out data.valid_count (2000 by default) and a set of 160 images
  // failed; valid_count 0 (now the default) draws fastai's RandomSplitter at data.valid_pct.
  ltfit::DataConfig data = index_data_config(dir, "kaggle", 0);
  data.valid_pct = 0.3;
  const auto index = ltfit::index_dataset(data, 0, false);
  CHECK(index.split == "valid_pct");
  CHECK(index.valid.size() == 6);
  CHECK(index.train.size() == 14);
  CHECK(index.classes == std::vector<std::string>{"cat", "dog"});
  // The same files split by the pattern layout land in the same halves: one rule.
  ltfit::DataConfig pattern = data;
  pattern.layout = ltfit::DataLayout::kPattern;
  pattern.label_pattern = R"(^([a-z]+)\.\d+\.jpg$)";
  const auto same = ltfit::index_dataset(pattern, 0, false);
  CHECK(sample_paths(same.valid) == sample_paths(index.valid));
}

TEST_CASE("index: layout folders over flat files names the layout that fits", "[data][index]") {
  TempDir dir;
  make_kaggle(dir.path() / "train", 3);
  try {
    ltfit::index_dataset(index_data_config(dir, "folders"), 0, false);
    FAIL("kaggle files were indexed as folders");
  } catch (const ltfit::DataError& e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("no class folders"));
    CHECK_THAT(e.hint(), Catch::Matchers::Contains("data.layout: kaggle"));
  }
  TempDir flat;
  for (const char* name : {"Abyssinian_1.jpg", "beagle_7.jpg"})
    touch_index_file(flat.path() / name);
  try {
    ltfit::index_dataset(index_data_config(flat, "folders"), 0, false);
    FAIL("flat files were indexed as folders");
  } catch (const ltfit::DataError& e) {
    CHECK_THAT(e.hint(), Catch::Matchers::Contains("data.layout: pattern"));
  }
}

TEST_CASE("index: split keys the data makes irrelevant are noted", "[data][index]") {
  TempDir dir;
  make_folders(dir.path());
  ltfit::DataConfig data = index_data_config(dir, "folders");
  data.valid_pct = 0.1;
  const auto index = ltfit::index_dataset(data, 0, false);
  std::string notes;
  for (const auto& note : index.notes) notes += note + "\n";
  CHECK_THAT(notes, Catch::Contains("data.valid_pct 0.1 is ignored: the data gives the split"));
  CHECK(ltfit::index_dataset(index_data_config(dir, "folders"), 0, false).notes.empty());
}

TEST_CASE("index: errors name what is missing", "[data][index]") {
  TempDir dir;
  ltfit::DataConfig missing = index_data_config(dir);
  missing.root = (dir.path() / "nowhere").string();
  const std::string root_message =
      data_error_message([&] { ltfit::index_dataset(missing, 0, false); });
  CHECK_THAT(root_message, Catch::Contains("nowhere") && Catch::Contains("does not exist"));

  // A class folder that is empty or missing in one split is no longer fatal (as a class the
  // CSV layout has in one split only): the class is kept and noted.
  make_folders(dir.path());
  fs::remove(dir.path() / "valid" / "dog" / "e.webp");
  const auto joined = [](const ltfit::DatasetIndex& index) {
    std::string notes;
    for (const auto& note : index.notes) notes += note + "\n";
    return notes;
  };
  const auto no_valid_dog = ltfit::index_dataset(index_data_config(dir, "folders"), 0, false);
  CHECK(no_valid_dog.classes == std::vector<std::string>{"cat", "dog"});
  CHECK_THAT(joined(no_valid_dog),
             Catch::Contains("with no validation image") && Catch::Contains("'dog'"));
  fs::remove_all(dir.path() / "valid" / "dog");
  CHECK_THAT(joined(ltfit::index_dataset(index_data_config(dir, "folders"), 0, false)),
             Catch::Contains("with no validation image"));
  // A class only validation has, and an empty class folder, as in the CSV and plain layouts.
  touch_index_file(dir.path() / "valid" / "bird" / "f.jpg");
  fs::create_directories(dir.path() / "train" / "fish");
  const auto extra = ltfit::index_dataset(index_data_config(dir, "folders"), 0, false);
  CHECK(extra.classes == std::vector<std::string>{"bird", "cat", "dog"});
  CHECK_THAT(joined(extra), Catch::Contains("seen only in validation") &&
                                Catch::Contains("'bird'") &&
                                Catch::Contains("class folder(s) without images, left out") &&
                                Catch::Contains("fish"));
  // A split with no image at all is still an error, naming the folder.
  fs::remove_all(dir.path() / "valid");
  fs::create_directories(dir.path() / "valid" / "cat");
  CHECK_THAT(data_error_message(
                 [&] { ltfit::index_dataset(index_data_config(dir, "folders"), 0, false); }),
             Catch::Contains("valid") && Catch::Contains("holds no images"));

  TempDir none;
  touch_index_file(none.path() / "train" / "readme.txt");
  CHECK_THAT(
      data_error_message([&] { ltfit::index_dataset(index_data_config(none), 0, false); }),
      Catch::Contains("no images") && Catch::Contains("kaggle") && Catch::Contains("folders"));
  CHECK_THROWS_AS(ltfit::index_dataset(index_data_config(none, "mixed"), 0, false),
                  ltfit::ConfigError);
}

TEST_CASE("index: class folders for evaluation", "[data][index]") {
  TempDir dir;
  make_folders(dir.path());
  const auto samples = ltfit::index_class_folders((dir.path() / "valid").string(), {"cat", "dog"});
  REQUIRE(samples.size() == 2);
  CHECK(samples[0].label == 0);
  CHECK(samples[1].label == 1);
  // A test set may lack a class of the model's: its images are evaluated, that class at
  // support 0 (evaluate says so); a class-folder level with none of the classes is an error.
  const auto without_fox =
      ltfit::index_class_folders((dir.path() / "valid").string(), {"cat", "dog", "fox"});
  CHECK(ltfit::testing::sample_paths(without_fox) == ltfit::testing::sample_paths(samples));
  std::filesystem::create_directories(dir.path() / "empty");
  CHECK_THAT(data_error_message([&] {
               ltfit::index_class_folders((dir.path() / "empty").string(), {"fox", "owl"});
             }),
             Catch::Contains("no class folder of the model's classes"));
  CHECK_THAT(data_error_message(
                 [&] { ltfit::index_class_folders((dir.path() / "valid").string(), {"cat"}); }),
             Catch::Contains("dog"));
}

TEST_CASE("index: image extensions are case-insensitive", "[data][index]") {
  for (const char* name : {"a.jpg", "b.JPEG", "c.png", "d.Bmp", "e.webp", "f.tif", "g.TIFF"}) {
    CHECK(ltfit::has_image_extension(name));
  }
  for (const char* name : {"a.txt", "jpg", "b.jpg.tmp", "c.gif", ""}) {
    CHECK_FALSE(ltfit::has_image_extension(name));
  }
}

TEST_CASE("index: synthetic sets index in both layouts", "[data][index]") {
  for (const std::string layout : {"folders", "kaggle"}) {
    TempDir dir;
    ltfit::SynthOptions synth;
    synth.out_dir = dir.str();
    synth.train = 6;
    synth.valid = 4;
    synth.layout = layout;
    synth.min_side = synth.max_side = 40;
    ltfit::write_synthetic_dataset(synth);
    const auto index = ltfit::index_dataset(index_data_config(dir, "auto", 4), 3, false);
    CHECK(index.layout == layout);
    CHECK(index.classes == std::vector<std::string>{"cat", "dog"});
    CHECK(index.train.size() == 6);
    CHECK(index.valid.size() == 4);
  }
}

TEST_CASE("index: data.subset keeps a seeded fraction of each class in each split",
          "[data][index]") {
  TempDir dir;
  make_kaggle(dir.path() / "train", 10);  // 10 cats + 10 dogs
  auto config = index_data_config(dir, "kaggle", 4);
  const auto full = ltfit::index_dataset(config, 42, false);
  config.subset = 0.25;
  const auto quarter = ltfit::index_dataset(config, 42, false);
  const auto count = [](const std::vector<ltfit::Sample>& s, std::int64_t label) {
    return std::count_if(s.begin(), s.end(), [&](const auto& x) { return x.label == label; });
  };
  CHECK(count(quarter.train, 0) == 2);  // ceil(0.25 * 8) of each class
  CHECK(count(quarter.train, 1) == 2);
  CHECK(count(quarter.valid, 0) == 1);  // ceil(0.25 * 2), at least one
  CHECK(count(quarter.valid, 1) == 1);
  const auto train = sample_paths(quarter.train), all = sample_paths(full.train);
  CHECK(std::is_sorted(train.begin(), train.end()));
  for (const auto& p : train) CHECK(std::find(all.begin(), all.end(), p) != all.end());
  CHECK(sample_paths(ltfit::index_dataset(config, 42, false).train) == train);
  CHECK(sample_paths(ltfit::index_dataset(config, 7, false).train) != train);
}

// ---- the layouts of data.layout: folders' other shapes, pattern, csv ---------------------------

TEST_CASE("index: a multi-label task gets label sets of one from single-label layouts",
          "[data][index]") {
  TempDir dir;
  make_folders(dir.path());
  const auto index = ltfit::index_dataset(index_data_config(dir, "folders"), 1, true);
  CHECK(index.multi_label);
  for (const auto& s : index.train) CHECK(s.labels == std::vector<std::int64_t>{s.label});
  for (const auto& s : index.valid) CHECK(s.labels == std::vector<std::int64_t>{s.label});
}

TEST_CASE("index: kaggle notes the image files it leaves out", "[data][index]") {
  TempDir dir;
  make_kaggle(dir.path(), 3);
  const auto index = ltfit::index_dataset(index_data_config(dir, "kaggle", 2), 0, false);
  CHECK(index.split == "valid_count");
  std::string notes;
  for (const auto& note : index.notes) notes += note + "\n";
  CHECK_THAT(notes, Catch::Contains("1 image file(s) not named") && Catch::Contains("1.jpg"));
}
