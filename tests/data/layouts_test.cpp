// The layouts beyond folders and kaggle's basics (layouts.h): the data.valid_pct split as
// torch's randperm draws it, class folders without a valid folder, plain class trees, the pattern
// and csv layouts (their notes, refusals and multi-label label sets), and split.csv. Split from
// dataset_index_test.cpp; the hidden oracle case is layout_oracle_test.cpp.
#include "ltfit/data/dataset_index.h"

#include <filesystem>
#include <functional>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "data/index_test_support.h"
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
  for (int k = 0; k < count; ++k) touch_index_file(dir / (name + "_" + std::to_string(k) + ".jpg"));
}

}  // namespace

TEST_CASE("index: the data.valid_pct split is torch's randperm after manual_seed (fastai)",
          "[data][index]") {
  // c0_1.jpg .. c9_1.jpg sorted; torch.manual_seed(42); torch.randperm(10) is
  // [2, 6, 1, 8, 4, 5, 0, 9, 3, 7], seed 7 gives [5, 0, 3, 4, 1, 7, 9, 6, 8, 2]: with
  // valid_pct 0.2 the first int(0.2 * 10) = 2 are validation (fastai's RandomSplitter).
  TempDir dir;
  for (int k = 0; k < 10; ++k) touch_index_file(dir.path() / ("c" + std::to_string(k) + "_1.jpg"));
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
  touch_index_file(dir.path() / "models" / "stage1.pth");  // fastai's models/: no images, left out
  touch_index_file(dir.path() / ".cache" / "x.jpg");
  const auto index = ltfit::index_dataset(layout_config(dir, "auto"), 3, false);
  CHECK(index.layout == "folders");
  CHECK(index.split == "valid_pct");
  CHECK(index.classes == std::vector<std::string>{"cat", "dog"});
  CHECK(index.train.size() + index.valid.size() == 10);
  CHECK(index.valid.size() == 2);
  CHECK_THAT(layout_notes(index), Catch::Contains("1 class folder(s) without images, left out") &&
                                      Catch::Contains("models"));
  // Identical on every call (resumes, ranks); another seed draws another split.
  CHECK(sample_paths(ltfit::index_dataset(layout_config(dir, "folders"), 3, false).valid) ==
        sample_paths(index.valid));
  CHECK(sample_paths(ltfit::index_dataset(layout_config(dir, "folders"), 4, false).valid) !=
        sample_paths(index.valid));

  TempDir only_valid;
  touch_named(only_valid.path() / "valid" / "cat", "c", 2);
  CHECK_THAT(data_error_message(
                 [&] { ltfit::index_dataset(layout_config(only_valid, "folders"), 0, false); }),
             Catch::Contains("train") && Catch::Contains("does not exist"));

  TempDir single;
  touch_index_file(single.path() / "cat" / "a.jpg");
  CHECK_THAT(
      data_error_message([&] { ltfit::index_dataset(layout_config(single, "folders"), 0, false); }),
      Catch::Contains("at least 2"));
}

TEST_CASE("index: pattern labels every image under the root by its name", "[data][index]") {
  TempDir dir;
  touch_named(dir.path(), "great_pyrenees", 3);
  touch_named(dir.path() / "more", "Abyssinian", 2);
  touch_index_file(dir.path() / ".hidden_1.jpg");
  touch_index_file(dir.path() / ".git" / "x_1.jpg");
  touch_index_file(dir.path() / "notes_1.txt");
  touch_index_file(dir.path() / "README.jpg");
  touch_index_file(dir.path() / "odd.png");
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
  const std::string none = data_error_message([&] { ltfit::index_dataset(data, 0, false); });
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

namespace {

// images/<name>.jpg for each name, and labels.csv with `csv` as its text.
ltfit::DataConfig csv_dataset(const TempDir& dir, const std::vector<std::string>& images,
                              const std::string& csv) {
  for (const auto& name : images) touch_index_file(dir.path() / "images" / (name + ".jpg"));
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
  CHECK_THAT(data_error_message([&] { ltfit::index_dataset(data, 0, false); }),
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
  // Nothing about the rows is noted; only that no validation image has 'bird'.
  REQUIRE(index.notes.size() == 1);
  CHECK_THAT(index.notes[0],
             Catch::Contains("with no validation image") && Catch::Contains("'bird'"));

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
  touch_index_file(outside.path() / "secret.jpg");
  TempDir dir;
  const std::vector<std::string> images = {"a", "b"};
  const std::string head = "name,tags\na,cat\nb,dog\n";
  for (const std::string& row :
       {std::string("../../x/secret,cat\n"), (outside.path() / "secret").string() + ",cat\n",
        std::string("link/secret,cat\n")}) {
    auto data = csv_dataset(dir, images, head + row);
    std::error_code ignored;
    fs::create_directory_symlink(outside.path(), dir.path() / "images" / "link", ignored);
    const std::string message = data_error_message([&] { ltfit::index_dataset(data, 0, false); });
    INFO(row);
    CHECK_THAT(message,
               Catch::Contains("labels.csv:4") &&
                   (Catch::Contains("leaves the data root") || Catch::Contains("is absolute")));
  }
}

TEST_CASE("index: csv errors: no usable row, an unknown column", "[data][index]") {
  TempDir dir;
  auto data = csv_dataset(dir, {}, "name,tags\nx,cat\ny,dog\n");
  CHECK_THAT(data_error_message([&] { ltfit::index_dataset(data, 0, false); }),
             Catch::Contains("no usable row") && Catch::Contains("2 row(s)") &&
                 Catch::Contains("does not exist"));
  data.csv.label_column = "label";
  CHECK_THAT(layout_config_message([&] { ltfit::index_dataset(data, 0, false); }),
             Catch::Contains("data.csv.label_column"));
  data.csv.file = "nowhere.csv";
  data.layout = ltfit::DataLayout::kCsv;
  CHECK_THAT(data_error_message([&] { ltfit::index_dataset(data, 0, false); }),
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
