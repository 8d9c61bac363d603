// How the csv layout reads labels and the split without being told (issue 40, A3): the is_valid
// column read by default when the file has it (fastai's ColSplitter column), labels holding
// spaces read as one class each noted loudly with the key that would split them, and the
// sidecar `ltfit synth` writes beside labels.csv, which gives the shapes' label_delim.
#include <filesystem>

#include <catch2/catch.hpp>

#include "data/index_test_support.h"
#include "ltfit/config/config_loader.h"
#include "ltfit/data/csv_sidecar.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/data/synth.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Contains;
using ltfit::testing::TempDir;
using ltfit::testing::touch_index_file;
using ltfit::testing::write_file;

namespace {

// A csv dataset of images a..f under <dir>/images, labels.csv holding `csv`.
ltfit::DataConfig labels_dataset(const TempDir& dir, const std::string& csv) {
  for (const char* name : {"a", "b", "c", "d", "e", "f"}) {
    touch_index_file(dir.path() / "images" / (std::string(name) + ".jpg"));
  }
  write_file(dir.path() / "labels.csv", csv);
  ltfit::DataConfig data;
  data.root = dir.str();
  data.layout = ltfit::DataLayout::kCsv;
  data.csv.folder = "images";
  data.csv.suffix = ".jpg";
  return data;
}

std::string all_notes(const ltfit::DatasetIndex& index) {
  std::string text;
  for (const auto& note : index.notes) text += note + "\n";
  return text;
}

}  // namespace

TEST_CASE("csv: the is_valid column splits by default, null or its absence: data.valid_pct",
          "[data][index][labels]") {
  TempDir dir;
  auto data = labels_dataset(dir,
                             "fname,labels,is_valid\n"
                             "a,cat,False\nb,dog,False\nc,cat,False\n"
                             "d,dog,False\ne,cat,True\nf,dog,True\n");
  REQUIRE(data.csv.valid_column == std::optional<std::string>("is_valid"));  // the default
  const auto index = ltfit::index_dataset(data, 0, false);
  CHECK(index.split == "valid_column");
  CHECK(index.valid.size() == 2);
  CHECK(fs::path(index.valid[0].path).filename() == "e.jpg");

  data.csv.valid_column.reset();  // null: fastai's valid_col=None
  CHECK(ltfit::index_dataset(data, 0, false).split == "valid_pct");

  write_file(dir.path() / "labels.csv", "fname,labels\na,cat\nb,dog\nc,cat\nd,dog\n");
  data.csv.valid_column = "is_valid";  // the default, and the file has no such column
  const auto pct = ltfit::index_dataset(data, 0, false);
  CHECK(pct.split == "valid_pct");
  CHECK(pct.train.size() + pct.valid.size() == 4);

  data.csv.valid_column = "split";  // any other name must exist
  CHECK_THROWS_AS(ltfit::index_dataset(data, 0, false), ltfit::ConfigError);
}

TEST_CASE("csv: single labels holding spaces are noted with data.csv.label_delim",
          "[data][index][labels]") {
  TempDir dir;
  auto data = labels_dataset(dir,
                             "fname,labels\n"
                             "a,circle square\nb,star\nc,circle\nd,square star\n");
  const auto index = ltfit::index_dataset(data, 0, false);
  CHECK_FALSE(index.multi_label);
  const std::string notes = all_notes(index);
  CHECK_THAT(notes, Contains("2 row(s)") && Contains("holds a space") &&
                        Contains("data.csv.label_delim") && Contains("'a' (line 2)"));

  data.csv.label_delim = " ";  // told: read as sets, nothing to note
  const auto sets = ltfit::index_dataset(data, 0, true);
  CHECK(sets.classes == std::vector<std::string>{"circle", "square", "star"});
  CHECK_THAT(all_notes(sets), !Contains("holds a space") && !Contains("label_delim"));
}

TEST_CASE("csv: ltfit synth's sidecar makes its shapes multi-label under a plain config",
          "[data][index][labels]") {
  TempDir dir;
  ltfit::SynthOptions options;
  options.out_dir = dir.str();
  options.task = "shapes";
  options.layout = "csv";
  options.train = 12;
  options.valid = 4;
  options.min_side = options.max_side = 32;
  ltfit::write_synthetic_dataset(options);
  REQUIRE(fs::exists(dir.path() / "labels.csv.json"));

  ltfit::Config config = ltfit::load_config_from_string("data: {root: " + dir.str() + "}\n", "q");
  REQUIRE_FALSE(ltfit::is_multi_label(config));
  CHECK_THAT(ltfit::apply_csv_sidecar(config), Contains("label_delim") && Contains("labels.csv"));
  CHECK(config.data.csv.label_delim == std::optional<std::string>(" "));
  CHECK(ltfit::is_multi_label(config));
  const auto index = ltfit::index_dataset(config.data, 0, ltfit::is_multi_label(config));
  CHECK(index.multi_label);
  CHECK(index.split == "valid_column");
  CHECK(index.train.size() == 12);
  CHECK(index.valid.size() == 4);
  for (const auto& name : index.classes) CHECK(name.find(' ') == std::string::npos);
  CHECK(index.classes.size() <= 4);

  // An explicit task, or a delimiter already set, is the config's word.
  ltfit::Config single = ltfit::load_config_from_string(
      "data: {root: " + dir.str() + "}\nmodel: {task: single_label}\n", "q");
  CHECK(ltfit::apply_csv_sidecar(single).empty());
  CHECK_FALSE(single.data.csv.label_delim);

  // The two-class tasks need no sidecar; one saying null gives no delimiter either.
  TempDir cats;
  options.out_dir = cats.str();
  options.task = "cats_dogs";
  ltfit::write_synthetic_dataset(options);
  CHECK_FALSE(fs::exists(cats.path() / "labels.csv.json"));
  ltfit::Config plain = ltfit::load_config_from_string("data: {root: " + cats.str() + "}\n", "q");
  CHECK(ltfit::apply_csv_sidecar(plain).empty());
  write_file(cats.path() / "labels.csv.json", ltfit::csv_sidecar_text("cats_dogs", ""));
  CHECK(ltfit::apply_csv_sidecar(plain).empty());
  CHECK_FALSE(ltfit::is_multi_label(plain));

  write_file(cats.path() / "labels.csv.json", "{not json");
  CHECK_THROWS_AS(ltfit::apply_csv_sidecar(plain), ltfit::DataError);
}
