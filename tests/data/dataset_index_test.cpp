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

#include "ltfit/data/synth.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using ltfit::testing::TempDir;
using ltfit::testing::write_file;

namespace {

void touch(const fs::path& path) { write_file(path, "not decoded by the index"); }

ltfit::DataConfig data_config(const TempDir& dir, const std::string& layout = "auto",
                              int valid_count = 5) {
  ltfit::DataConfig data;
  data.root = dir.str();
  data.layout = ltfit::parse_data_layout(layout);
  data.valid_count = valid_count;
  return data;
}

// train/{cat,dog} and valid/{cat,dog} with a few distractors that must be skipped (and a
// directory named folder.jpg, indexed by name for the loader to skip and name).
void make_folders(const fs::path& root) {
  touch(root / "train" / "cat" / "a.jpg");
  touch(root / "train" / "cat" / "b.JPG");
  touch(root / "train" / "cat" / "notes.txt");
  touch(root / "train" / "cat" / ".hidden.jpg");
  fs::create_directories(root / "train" / "cat" / "folder.jpg");
  touch(root / "train" / "dog" / "c.png");
  touch(root / "valid" / "cat" / "d.jpeg");
  touch(root / "valid" / "dog" / "e.webp");
}

void make_kaggle(const fs::path& dir, int per_class) {
  for (int i = 0; i < per_class; ++i) {
    touch(dir / ("cat." + std::to_string(i) + ".jpg"));
    touch(dir / ("dog." + std::to_string(i) + ".jpg"));
  }
  touch(dir / "readme.txt");
  touch(dir / "1.jpg");  // Kaggle's unlabelled test naming: no class, skipped
}

std::vector<std::string> paths(const std::vector<ltfit::Sample>& samples) {
  std::vector<std::string> out;
  for (const auto& s : samples) out.push_back(s.path);
  return out;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ltfit::DataError& e) {
    return e.what();
  }
  return "(no DataError)";
}

}  // namespace

TEST_CASE("index: folders layout, classes sorted, non-images skipped", "[data][index]") {
  TempDir dir;
  make_folders(dir.path());
  for (const std::string layout : {"auto", "folders"}) {
    const auto index = ltfit::index_dataset(data_config(dir, layout), 1, false);
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
  const auto index = ltfit::index_dataset(data_config(dir, "auto", 5), 42, false);
  CHECK(index.layout == "kaggle");
  CHECK(index.classes == std::vector<std::string>{"cat", "dog"});
  CHECK(index.valid.size() == 5);
  CHECK(index.train.size() == 15);
  const auto train = paths(index.train), valid = paths(index.valid);
  CHECK(std::is_sorted(train.begin(), train.end()));
  CHECK(std::is_sorted(valid.begin(), valid.end()));
  std::set<std::string> all(train.begin(), train.end());
  all.insert(valid.begin(), valid.end());
  CHECK(all.size() == 20);
  for (const auto& s : index.train) {
    CHECK(s.label == (fs::path(s.path).filename().string().rfind("cat", 0) == 0 ? 0 : 1));
  }
  CHECK(paths(ltfit::index_dataset(data_config(dir, "kaggle", 5), 42, false).valid) == valid);
  CHECK(paths(ltfit::index_dataset(data_config(dir, "kaggle", 5), 43, false).valid) != valid);
}

TEST_CASE("index: kaggle files directly in the root are found", "[data][index]") {
  TempDir dir;
  make_kaggle(dir.path(), 3);
  const auto index = ltfit::index_dataset(data_config(dir, "auto", 2), 0, false);
  CHECK(index.layout == "kaggle");
  CHECK(index.train.size() + index.valid.size() == 6);
}

TEST_CASE("index: too large a validation count is a data error", "[data][index]") {
  TempDir dir;
  make_kaggle(dir.path(), 3);
  CHECK_THROWS_AS(ltfit::index_dataset(data_config(dir, "kaggle", 6), 0, false), ltfit::DataError);
}

TEST_CASE("index: an empty validation split is a data error naming the split", "[data][index]") {
  TempDir dir;
  make_kaggle(dir.path(), 3);
  // Before, valid_count 0 indexed an empty validation split and training failed after a whole
  // epoch ("no readable image to evaluate"), with no checkpoint.
  try {
    ltfit::index_dataset(data_config(dir, "kaggle", 0), 0, false);
    FAIL("an empty validation split was indexed");
  } catch (const ltfit::DataError& e) {
    CHECK(e.exit_code() == ltfit::ExitCode::kData);
    CHECK_THAT(e.what(), Catch::Matchers::Contains("data.valid_count is 0") &&
                             Catch::Matchers::Contains("the validation split would be empty"));
    CHECK_THAT(e.hint(), Catch::Matchers::Contains("between 1 and"));
  }
}

TEST_CASE("index: errors name what is missing", "[data][index]") {
  TempDir dir;
  ltfit::DataConfig missing = data_config(dir);
  missing.root = (dir.path() / "nowhere").string();
  const std::string root_message = message_of([&] { ltfit::index_dataset(missing, 0, false); });
  CHECK_THAT(root_message, Catch::Contains("nowhere") && Catch::Contains("does not exist"));

  make_folders(dir.path());
  fs::remove(dir.path() / "valid" / "dog" / "e.webp");
  const std::string empty_message =
      message_of([&] { ltfit::index_dataset(data_config(dir, "folders"), 0, false); });
  CHECK_THAT(empty_message, Catch::Contains("dog") && Catch::Contains("no images"));

  fs::remove_all(dir.path() / "valid" / "dog");
  CHECK_THAT(message_of([&] { ltfit::index_dataset(data_config(dir, "folders"), 0, false); }),
             Catch::Contains("dog") && Catch::Contains("missing"));

  TempDir none;
  touch(none.path() / "train" / "readme.txt");
  CHECK_THAT(
      message_of([&] { ltfit::index_dataset(data_config(none), 0, false); }),
      Catch::Contains("no images") && Catch::Contains("kaggle") && Catch::Contains("folders"));
  CHECK_THROWS_AS(ltfit::index_dataset(data_config(none, "mixed"), 0, false), ltfit::ConfigError);
}

TEST_CASE("index: class folders for evaluation", "[data][index]") {
  TempDir dir;
  make_folders(dir.path());
  const auto samples = ltfit::index_class_folders((dir.path() / "valid").string(), {"cat", "dog"});
  REQUIRE(samples.size() == 2);
  CHECK(samples[0].label == 0);
  CHECK(samples[1].label == 1);
  CHECK_THAT(message_of([&] {
               ltfit::index_class_folders((dir.path() / "valid").string(), {"cat", "dog", "fox"});
             }),
             Catch::Contains("fox"));
  CHECK_THAT(
      message_of([&] { ltfit::index_class_folders((dir.path() / "valid").string(), {"cat"}); }),
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
    const auto index = ltfit::index_dataset(data_config(dir, "auto", 4), 3, false);
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
  auto config = data_config(dir, "kaggle", 4);
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
  const auto train = paths(quarter.train), all = paths(full.train);
  CHECK(std::is_sorted(train.begin(), train.end()));
  for (const auto& p : train) CHECK(std::find(all.begin(), all.end(), p) != all.end());
  CHECK(paths(ltfit::index_dataset(config, 42, false).train) == train);
  CHECK(paths(ltfit::index_dataset(config, 7, false).train) != train);
}

// ---- the layouts of data.layout: folders' other shapes, pattern, csv ---------------------------

namespace {

ltfit::DataConfig layout_config(const TempDir& dir, const std::string& layout) {
  ltfit::DataConfig data;
  data.root = dir.str();
  data.layout = ltfit::parse_data_layout(layout);
  return data;
}

std::vector<std::string> layout_names(const std::vector<ltfit::Sample>& samples) {
  std::vector<std::string> out;
  for (const auto& s : samples) out.push_back(fs::path(s.path).filename().string());
  return out;
}

std::string layout_notes(const ltfit::DatasetIndex& index) {
  std::string text;
  for (const auto& note : index.notes) text += note + "\n";
  return text;
}

// The ConfigError message of `f`, or "(no ConfigError)".
std::string layout_config_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const ltfit::ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}

// <root>/<name>_<k>.jpg for k in 0..count-1.
void touch_named(const fs::path& dir, const std::string& name, int count) {
  for (int k = 0; k < count; ++k) touch(dir / (name + "_" + std::to_string(k) + ".jpg"));
}

}  // namespace

TEST_CASE("index: the data.valid_pct split is torch's randperm after manual_seed (fastai)",
          "[data][index]") {
  // c0_1.jpg .. c9_1.jpg sorted; torch.manual_seed(42); torch.randperm(10) is
  // [2, 6, 1, 8, 4, 5, 0, 9, 3, 7], seed 7 gives [5, 0, 3, 4, 1, 7, 9, 6, 8, 2]: with
  // valid_pct 0.2 the first int(0.2 * 10) = 2 are validation (fastai's RandomSplitter).
  TempDir dir;
  for (int k = 0; k < 10; ++k) touch(dir.path() / ("c" + std::to_string(k) + "_1.jpg"));
  auto data = layout_config(dir, "pattern");
  const auto index = ltfit::index_dataset(data, 42, false);
  CHECK(index.split == "valid_pct");
  CHECK(layout_names(index.valid) == std::vector<std::string>{"c2_1.jpg", "c6_1.jpg"});
  CHECK(index.train.size() == 8);
  CHECK(layout_names(ltfit::index_dataset(data, 7, false).valid) ==
        std::vector<std::string>{"c0_1.jpg", "c5_1.jpg"});
  // Each validation image is a class of its own here: noted, kept.
  CHECK_THAT(layout_notes(index), Catch::Contains("2 class(es) seen only in validation") &&
                                      Catch::Contains("'c2'") && Catch::Contains("'c6'"));
  // The cut is kept within [1, n-1]: int(0.01 * 10) = 0 would leave validation empty.
  data.valid_pct = 0.01;
  CHECK(ltfit::index_dataset(data, 42, false).valid.size() == 1);
  data.valid_pct = 1.0;
  CHECK(ltfit::index_dataset(data, 42, false).train.size() == 1);
}

TEST_CASE("index: folders without a valid folder split the train folder by valid_pct",
          "[data][index]") {
  TempDir dir;
  touch_named(dir.path() / "training" / "cat", "c", 5);
  touch_named(dir.path() / "training" / "dog", "d", 5);
  auto data = layout_config(dir, "auto");
  data.train_folder = "training";
  data.valid_pct = 0.3;
  const auto index = ltfit::index_dataset(data, 1, false);
  CHECK(index.layout == "folders");
  CHECK(index.split == "valid_pct");
  CHECK(index.classes == std::vector<std::string>{"cat", "dog"});
  CHECK(index.valid.size() == 3);
  CHECK(index.train.size() == 7);
  for (const auto& s : index.train) CHECK(s.labels.empty());
  // A valid folder of another name is used when data.valid_folder names it.
  touch_named(dir.path() / "val" / "cat", "v", 1);
  touch_named(dir.path() / "val" / "dog", "w", 1);
  data.valid_folder = "val";
  const auto named = ltfit::index_dataset(data, 1, false);
  CHECK(named.split == "folders");
  CHECK(named.train.size() == 10);
  CHECK(layout_names(named.valid) == std::vector<std::string>{"v_0.jpg", "w_0.jpg"});
}

TEST_CASE("index: a plain tree of class folders is a folders layout split by valid_pct",
          "[data][index]") {
  TempDir dir;
  touch_named(dir.path() / "cat", "c", 4);
  touch_named(dir.path() / "dog", "d", 6);
  touch(dir.path() / "models" / "stage1.pth");  // fastai's models/: no images, left out
  touch(dir.path() / ".cache" / "x.jpg");
  const auto index = ltfit::index_dataset(layout_config(dir, "auto"), 3, false);
  CHECK(index.layout == "folders");
  CHECK(index.split == "valid_pct");
  CHECK(index.classes == std::vector<std::string>{"cat", "dog"});
  CHECK(index.train.size() + index.valid.size() == 10);
  CHECK(index.valid.size() == 2);
  CHECK_THAT(layout_notes(index), Catch::Contains("1 subfolder(s) of the data root without "
                                                  "images") &&
                                      Catch::Contains("models"));
  // Identical on every call (resumes, ranks); another seed draws another split.
  CHECK(paths(ltfit::index_dataset(layout_config(dir, "folders"), 3, false).valid) ==
        paths(index.valid));
  CHECK(paths(ltfit::index_dataset(layout_config(dir, "folders"), 4, false).valid) !=
        paths(index.valid));

  TempDir only_valid;
  touch_named(only_valid.path() / "valid" / "cat", "c", 2);
  CHECK_THAT(
      message_of([&] { ltfit::index_dataset(layout_config(only_valid, "folders"), 0, false); }),
      Catch::Contains("train") && Catch::Contains("does not exist"));

  TempDir single;
  touch(single.path() / "cat" / "a.jpg");
  CHECK_THAT(message_of([&] { ltfit::index_dataset(layout_config(single, "folders"), 0, false); }),
             Catch::Contains("at least 2"));
}

TEST_CASE("index: a multi-label task gets label sets of one from single-label layouts",
          "[data][index]") {
  TempDir dir;
  make_folders(dir.path());
  const auto index = ltfit::index_dataset(data_config(dir, "folders"), 1, true);
  CHECK(index.multi_label);
  for (const auto& s : index.train) CHECK(s.labels == std::vector<std::int64_t>{s.label});
  for (const auto& s : index.valid) CHECK(s.labels == std::vector<std::int64_t>{s.label});
}

TEST_CASE("index: pattern labels every image under the root by its name", "[data][index]") {
  TempDir dir;
  touch_named(dir.path(), "great_pyrenees", 3);
  touch_named(dir.path() / "more", "Abyssinian", 2);
  touch(dir.path() / ".hidden_1.jpg");
  touch(dir.path() / ".git" / "x_1.jpg");
  touch(dir.path() / "notes_1.txt");
  touch(dir.path() / "README.jpg");
  touch(dir.path() / "odd.png");
  const auto index = ltfit::index_dataset(layout_config(dir, "pattern"), 5, false);
  CHECK(index.layout == "pattern");
  CHECK(index.classes == std::vector<std::string>{"Abyssinian", "great_pyrenees"});
  CHECK(index.train.size() + index.valid.size() == 5);
  CHECK(index.valid.size() == 1);
  for (const auto* split : {&index.train, &index.valid}) {
    for (const auto& s : *split) {
      const std::string name = fs::path(s.path).filename().string();
      CHECK(index.classes[static_cast<std::size_t>(s.label)] == name.substr(0, name.rfind('_')));
    }
  }
  // Never dropped silently: the names that do not match are counted and named.
  CHECK_THAT(layout_notes(index), Catch::Contains("2 image file(s) whose name does not match") &&
                                      Catch::Contains("README.jpg") && Catch::Contains("odd.png"));

  auto data = layout_config(dir, "pattern");
  data.label_pattern = R"(^([a-z]+)\.(\d+)\.jpg$)";
  const std::string none = message_of([&] { ltfit::index_dataset(data, 0, false); });
  CHECK_THAT(none, Catch::Contains(data.label_pattern) && Catch::Contains("e.g. '"));
  try {
    ltfit::index_dataset(data, 0, false);
  } catch (const ltfit::DataError& e) {
    CHECK(e.exit_code() == ltfit::ExitCode::kData);
  }
  data.label_pattern = "(unclosed";
  CHECK_THAT(layout_config_message([&] { ltfit::index_dataset(data, 0, false); }),
             Catch::Contains("data.label_pattern"));
  data.label_pattern = R"(^.+_\d+\.jpg$)";
  CHECK_THAT(layout_config_message([&] { ltfit::index_dataset(data, 0, false); }),
             Catch::Contains("group"));
}

TEST_CASE("index: kaggle notes the image files it leaves out", "[data][index]") {
  TempDir dir;
  make_kaggle(dir.path(), 3);
  const auto index = ltfit::index_dataset(data_config(dir, "kaggle", 2), 0, false);
  CHECK(index.split == "valid_count");
  CHECK_THAT(layout_notes(index),
             Catch::Contains("1 image file(s) not named") && Catch::Contains("1.jpg"));
}

namespace {

// images/<name>.jpg for each name, and labels.csv with `csv` as its text.
ltfit::DataConfig csv_dataset(const TempDir& dir, const std::vector<std::string>& images,
                              const std::string& csv) {
  for (const auto& name : images) touch(dir.path() / "images" / (name + ".jpg"));
  write_file(dir.path() / "labels.csv", csv);
  ltfit::DataConfig data = layout_config(dir, "auto");
  data.csv.file = "labels.csv";
  data.csv.path_column = "name";
  data.csv.label_column = "tags";
  data.csv.folder = "images";
  data.csv.suffix = ".jpg";
  return data;
}

}  // namespace

TEST_CASE("index: csv rows, a valid column, and the rows skipped and noted", "[data][index]") {
  TempDir dir;
  fs::create_directories(dir.path() / "images" / "sub");
  auto data = csv_dataset(dir, {"a", "b", "c", "d", "e", "f", "g"},
                          "name,tags,is_valid\n"
                          "a,cat,0\n"
                          "b,dog,False\n"
                          "c,cat,True\n"
                          "d,dog,yes\n"
                          "gone,cat,0\n"          // no images/gone.jpg: skipped, noted
                          "a,dog,1\n"             // a again: skipped, noted
                          "e,,0\n"                // empty label: skipped, noted
                          "f,fox,t\n"             // fox only in validation: noted, kept
                          "\"sub/../b\",cat,0\n"  // b again, through ..: skipped, noted
                          "g,dog,maybe\n");       // neither true nor false: training, noted
  data.csv.valid_column = "is_valid";
  const auto index = ltfit::index_dataset(data, 0, false);
  CHECK(index.layout == "csv");
  CHECK(index.split == "valid_column");
  CHECK_FALSE(index.multi_label);
  CHECK(index.classes == std::vector<std::string>{"cat", "dog", "fox"});
  CHECK(layout_names(index.train) == std::vector<std::string>{"a.jpg", "b.jpg", "g.jpg"});
  CHECK(layout_names(index.valid) == std::vector<std::string>{"c.jpg", "d.jpg", "f.jpg"});
  CHECK(index.train[0].path == (dir.path() / "images" / "a.jpg").string());
  CHECK(index.train[1].label == 1);
  CHECK(index.valid[2].label == 2);
  const std::string notes = layout_notes(index);
  CHECK_THAT(notes, Catch::Contains("1 row(s) of '") && Catch::Contains("does not exist") &&
                        Catch::Contains("'gone' (line 6)"));
  CHECK_THAT(notes, Catch::Contains("2 row(s)") && Catch::Contains("earlier row") &&
                        Catch::Contains("'a' (line 7)") && Catch::Contains("'sub/../b' (line 10)"));
  CHECK_THAT(notes, Catch::Contains("empty label") && Catch::Contains("'e' (line 8)"));
  CHECK_THAT(notes, Catch::Contains("seen only in validation") && Catch::Contains("'fox'"));
  CHECK_THAT(notes, Catch::Contains("neither true nor false") && Catch::Contains("'g' (line 11)"));

  // Without the valid column: data.valid_pct over the sorted usable rows.
  data.csv.valid_column.reset();
  const auto pct = ltfit::index_dataset(data, 0, false);
  CHECK(pct.split == "valid_pct");
  CHECK(pct.train.size() + pct.valid.size() == 6);
  CHECK(pct.valid.size() == 1);

  // No validation row marked, or no training row left: an empty split is a data error.
  write_file(dir.path() / "labels.csv", "name,tags,is_valid\na,cat,0\nb,dog,0\n");
  data.csv.valid_column = "is_valid";
  CHECK_THAT(message_of([&] { ltfit::index_dataset(data, 0, false); }),
             Catch::Contains("none") && Catch::Contains("validation split would be empty"));
}

TEST_CASE("index: csv label sets for a multi-label task (label_delim)", "[data][index]") {
  TempDir dir;
  auto data = csv_dataset(dir, {"a", "b", "c", "d", "e"},
                          "name,tags,split\n"
                          "a,cat dog,0\n"
                          "b,,0\n"  // no labels: a valid image with an empty set
                          "c,dog  dog cat,1\n"
                          "d,bird,0\n"
                          "e,dog,1\n");
  data.csv.label_delim = " ";
  data.csv.valid_column = "2";  // by index
  const auto index = ltfit::index_dataset(data, 0, true);
  CHECK(index.multi_label);
  CHECK(index.classes == std::vector<std::string>{"bird", "cat", "dog"});
  REQUIRE(index.train.size() == 3);
  CHECK(index.train[0].labels == std::vector<std::int64_t>{1, 2});
  CHECK(index.train[0].label == 1);
  CHECK(index.train[1].labels.empty());
  CHECK(index.train[1].label == -1);
  CHECK(index.train[2].labels == std::vector<std::int64_t>{0});
  REQUIRE(index.valid.size() == 2);
  CHECK(index.valid[0].labels == std::vector<std::int64_t>{1, 2});  // sorted, unique
  CHECK(index.notes.empty());

  const std::string text = ltfit::split_csv(index, dir.str());
  CHECK(text ==
        "path,split,labels\n"
        "images/a.jpg,train,cat dog\n"
        "images/b.jpg,train,\n"
        "images/c.jpg,valid,cat dog\n"
        "images/d.jpg,train,bird\n"
        "images/e.jpg,valid,dog\n");
}

TEST_CASE("index: csv paths that leave the root are refused with the file and line",
          "[data][index]") {
  TempDir outside;
  touch(outside.path() / "secret.jpg");
  TempDir dir;
  const std::vector<std::string> images = {"a", "b"};
  const std::string head = "name,tags\na,cat\nb,dog\n";
  for (const std::string& row :
       {std::string("../../x/secret,cat\n"), (outside.path() / "secret").string() + ",cat\n",
        std::string("link/secret,cat\n")}) {
    auto data = csv_dataset(dir, images, head + row);
    std::error_code ignored;
    fs::create_directory_symlink(outside.path(), dir.path() / "images" / "link", ignored);
    const std::string message = message_of([&] { ltfit::index_dataset(data, 0, false); });
    INFO(row);
    CHECK_THAT(message,
               Catch::Contains("labels.csv:4") &&
                   (Catch::Contains("leaves the data root") || Catch::Contains("is absolute")));
  }
}

TEST_CASE("index: csv errors: no usable row, an unknown column", "[data][index]") {
  TempDir dir;
  auto data = csv_dataset(dir, {}, "name,tags\nx,cat\ny,dog\n");
  CHECK_THAT(message_of([&] { ltfit::index_dataset(data, 0, false); }),
             Catch::Contains("no usable row") && Catch::Contains("2 row(s)") &&
                 Catch::Contains("does not exist"));
  data.csv.label_column = "label";
  CHECK_THAT(layout_config_message([&] { ltfit::index_dataset(data, 0, false); }),
             Catch::Contains("data.csv.label_column"));
  data.csv.file = "nowhere.csv";
  data.layout = ltfit::DataLayout::kCsv;
  CHECK_THAT(message_of([&] { ltfit::index_dataset(data, 0, false); }),
             Catch::Contains("nowhere.csv"));
}

TEST_CASE("index: split.csv quotes what needs quoting", "[data][index]") {
  ltfit::DatasetIndex index;
  index.classes = {"a,b", "say \"hi\""};
  index.train = {{"/data/x/one, two.jpg", 0}};
  index.valid = {{"/data/x/sub/z.jpg", 1}};
  CHECK(ltfit::split_csv(index, "/data/x") ==
        "path,split,labels\n"
        "\"one, two.jpg\",train,\"a,b\"\n"
        "sub/z.jpg,valid,\"say \"\"hi\"\"\"\n");
}

// Run by tests/data/layout_oracle.sh: indexes the tree under $LTFIT_LAYOUT_ORACLE_DIR/root once per
// case of request.json ({"cases": [{"label_pattern", "valid_pct", "seed"}]}) with layout pattern,
// and writes what ltfit found to ltfit.json for tests/data/layout_oracle.py to compare with
// fastai's RegexLabeller and RandomSplitter.
TEST_CASE("layout oracle: pattern labels and the valid_pct split for fastai to check",
          "[.layout_oracle]") {
  const char* dir = std::getenv("LTFIT_LAYOUT_ORACLE_DIR");
  if (dir == nullptr) FAIL("LTFIT_LAYOUT_ORACLE_DIR is not set: run tests/data/layout_oracle.sh");
  const fs::path base(dir);
  const auto request = nlohmann::json::parse(ltfit::testing::read_file(base / "request.json"));
  nlohmann::json results = nlohmann::json::array();
  for (const auto& c : request.at("cases")) {
    ltfit::DataConfig data;
    data.root = (base / "root").string();
    data.layout = ltfit::DataLayout::kPattern;
    data.label_pattern = c.at("label_pattern").get<std::string>();
    data.valid_pct = c.at("valid_pct").get<double>();
    const auto index = ltfit::index_dataset(data, c.at("seed").get<std::uint64_t>(), false);
    nlohmann::json out = c;
    for (const auto& [name, samples] :
         {std::pair{"train", &index.train}, {"valid", &index.valid}}) {
      out[name] = nlohmann::json::array();
      for (const auto& s : *samples) {
        out[name].push_back(
            {{"path", s.path}, {"label", index.classes.at(static_cast<std::size_t>(s.label))}});
      }
    }
    out["notes"] = index.notes;
    results.push_back(out);
  }
  write_file(base / "ltfit.json", results.dump(1));
  CHECK(results.size() == request.at("cases").size());
}
