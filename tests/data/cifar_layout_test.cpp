// The cifar10 and cifar100 layouts (layouts.h, layout_cifar.cpp) and `ltfit synth`'s CIFAR sets:
// records read as CIFAR's documentation lays them out (checked against hand-made bytes, through
// the loader), auto-detection, sorted class numbering, CIFAR-100's two labels, every malformed
// file refused with exit 3 naming it, and a run trained end to end from the batches.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include "data/index_test_support.h"
#include "ltfit/config/config_loader.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/data/loader.h"
#include "ltfit/data/synth.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::data_error_message;
using ltfit::testing::TempDir;
using ltfit::testing::write_file;

namespace {

// A record of `label_bytes` labels then planes where pixel p of channel c is (p * 3 + c + seed).
std::string cifar_record(const std::vector<int>& labels, int seed) {
  std::string record;
  for (int label : labels) record += static_cast<char>(label);
  for (int c = 0; c < 3; ++c) {
    for (int p = 0; p < 1024; ++p) record += static_cast<char>((p * 3 + c + seed) % 256);
  }
  return record;
}

ltfit::DataConfig cifar_config(const fs::path& root, const std::string& layout = "auto") {
  ltfit::DataConfig data;
  data.root = root.string();
  data.layout = ltfit::parse_data_layout(layout);
  return data;
}

// A CIFAR-10 folder: `train` records in data_batch_1.bin, `test` in test_batch.bin, labels
// cycling through the names `cat dog bird` (raw 0, 1, 2: sorted, bird 0, cat 1, dog 2).
fs::path write_cifar10(const fs::path& dir, int train, int test) {
  std::string batch;
  for (int i = 0; i < train; ++i) batch += cifar_record({i % 3}, i);
  write_file(dir / "data_batch_1.bin", batch);
  std::string tests;
  for (int i = 0; i < test; ++i) tests += cifar_record({i % 3}, 100 + i);
  write_file(dir / "test_batch.bin", tests);
  write_file(dir / "batches.meta.txt", "cat\ndog\nbird\n\n");
  return dir;
}

std::string cifar_index_error(const fs::path& root) {
  return data_error_message([&] { ltfit::index_dataset(cifar_config(root), 0, false); });
}

}  // namespace

TEST_CASE("cifar10: records read as documented, held in memory, named <file>#<record>",
          "[data][cifar]") {
  TempDir dir;
  write_cifar10(dir.path() / "cifar-10-batches-bin", 6, 3);
  const ltfit::DatasetIndex index = ltfit::index_dataset(cifar_config(dir.path()), 0, false);
  CHECK(index.layout == "cifar10");
  CHECK(index.split == "test_batch");
  CHECK(index.classes == std::vector<std::string>{"bird", "cat", "dog"});
  REQUIRE(index.train.size() == 6);
  REQUIRE(index.valid.size() == 3);
  const std::string first = (dir.path() / "cifar-10-batches-bin" / "data_batch_1.bin").string();
  const auto record = [&](int k) {
    for (const ltfit::Sample& s : index.train) {
      if (s.path == first + "#" + std::to_string(k)) return s;
    }
    FAIL("no sample " << first << "#" << k);
    return ltfit::Sample{};
  };
  // Raw label 0 (cat) is class 1, raw 2 (bird) class 0.
  CHECK(record(0).label == 1);
  CHECK(record(1).label == 2);
  CHECK(record(2).label == 0);
  const ltfit::Sample r4 = record(4);
  REQUIRE(r4.image);
  CHECK(r4.image.width == 32);
  CHECK(r4.image.height == 32);
  // Pixel p, channel c of record 4 is (p * 3 + c + 4) % 256: R, G, B interleaved per pixel.
  const std::uint8_t* pixels = r4.image.data();
  for (int p : {0, 1, 31, 32, 1023}) {
    for (int c = 0; c < 3; ++c) CHECK(pixels[p * 3 + c] == (p * 3 + c + 4) % 256);
  }
  // One block for the split, not one allocation per image.
  CHECK(record(0).image.block == r4.image.block);

  // Through the loader, unaugmented at 32 px: the very pixels, in the batch's HWC layout.
  ltfit::LoaderOptions options;
  options.data.image_size = 32;
  options.data.batch_size = 3;
  options.data.workers = 2;
  ltfit::Loader loader({record(4), record(0)}, options);
  loader.start_epoch(0);
  const auto batch = loader.next();
  REQUIRE(batch);
  const auto image = batch->images[0].contiguous();
  const auto* data = image.data_ptr<std::uint8_t>();
  for (int p : {0, 5, 1023}) {
    for (int c = 0; c < 3; ++c) CHECK(data[p * 3 + c] == (p * 3 + c + 4) % 256);
  }
  CHECK(loader.skipped().count == 0);
}

TEST_CASE("cifar100: the fine or the coarse label trains, as data.cifar_label says",
          "[data][cifar]") {
  TempDir dir;
  const fs::path folder = dir.path() / "cifar-100-binary";
  std::string train, test;
  for (int i = 0; i < 4; ++i) train += cifar_record({i % 2, i % 3}, i);  // coarse, fine
  for (int i = 0; i < 2; ++i) test += cifar_record({i % 2, i % 3}, i);
  write_file(folder / "train.bin", train);
  write_file(folder / "test.bin", test);
  write_file(folder / "fine_label_names.txt", "apple\nbee\ncloud\n");
  write_file(folder / "coarse_label_names.txt", "fruit\ninsects\n");
  ltfit::DataConfig data = cifar_config(dir.path());
  const ltfit::DatasetIndex fine = ltfit::index_dataset(data, 0, false);
  CHECK(fine.layout == "cifar100");
  CHECK(fine.classes == std::vector<std::string>{"apple", "bee", "cloud"});
  data.cifar_label = ltfit::CifarLabel::kCoarse;
  const ltfit::DatasetIndex coarse = ltfit::index_dataset(data, 0, false);
  CHECK(coarse.classes == std::vector<std::string>{"fruit", "insects"});
  const std::string train_bin = (folder / "train.bin").string();
  for (const auto& s : fine.train) {
    const int k = std::stoi(s.path.substr(s.path.rfind('#') + 1));
    CHECK(s.label == k % 3);
  }
  for (const auto& s : coarse.train) {
    const int k = std::stoi(s.path.substr(s.path.rfind('#') + 1));
    CHECK(s.label == k % 2);
  }
}

TEST_CASE("cifar: malformed batches and names are refused with exit 3, naming the file",
          "[data][cifar]") {
  TempDir dir;
  const fs::path folder = write_cifar10(dir.path(), 3, 2);
  SECTION("a truncated batch") {
    std::string bytes = ltfit::testing::read_file(folder / "data_batch_1.bin");
    write_file(folder / "data_batch_1.bin", bytes.substr(0, bytes.size() - 100));
    const std::string message = cifar_index_error(dir.path());
    CHECK_THAT(message,
               Contains("data_batch_1.bin") && Contains("not a whole number of 3073-byte records"));
  }
  SECTION("an empty test batch") {
    write_file(folder / "test_batch.bin", "");
    CHECK_THAT(cifar_index_error(dir.path()), Contains("test_batch.bin' is 0 bytes"));
  }
  SECTION("a label past the class names") {
    write_file(folder / "data_batch_1.bin", cifar_record({0}, 0) + cifar_record({7}, 1));
    CHECK_THAT(cifar_index_error(dir.path()),
               Contains("data_batch_1.bin' record 1: label 7") &&
                   Contains("batches.meta.txt' names only 3 classes"));
  }
  SECTION("class names missing, repeated or blank") {
    fs::remove(folder / "batches.meta.txt");
    CHECK_THAT(cifar_index_error(dir.path()),
               Contains("batches.meta.txt") && Contains("file not found"));
    write_file(folder / "batches.meta.txt", "cat\ncat\nbird\n");
    CHECK_THAT(cifar_index_error(dir.path()), Contains("a name repeated"));
    write_file(folder / "batches.meta.txt", "cat\n\nbird\n");
    CHECK_THAT(cifar_index_error(dir.path()), Contains("a blank one among them"));
    write_file(folder / "batches.meta.txt", std::string("cat\ndo\0g\nbird\n", 14));
    CHECK_THAT(cifar_index_error(dir.path()), Contains("a name that is not text"));
    write_file(folder / "batches.meta.txt", "cat\n\xff\xfe\nbird\n");
    CHECK_THAT(cifar_index_error(dir.path()), Contains("a name that is not text"));
  }
  SECTION("a batch that is a directory") {
    fs::remove(folder / "test_batch.bin");
    fs::create_directory(folder / "test_batch.bin");
    ltfit::DataConfig data = cifar_config(dir.path(), "cifar10");
    CHECK_THAT(data_error_message([&] { ltfit::index_dataset(data, 0, false); }),
               Contains("no CIFAR batches"));
  }
}

TEST_CASE("synth --layout cifar10 and cifar100 write what the layouts read", "[data][cifar]") {
  TempDir dir;
  for (const std::string layout : {"cifar10", "cifar100"}) {
    INFO(layout);
    ltfit::SynthOptions options;
    options.out_dir = (dir.path() / layout).string();
    options.layout = layout;
    options.train = 12;
    options.valid = 6;
    const ltfit::SynthResult written = ltfit::write_synthetic_dataset(options);
    CHECK(written.train_written == 12);
    CHECK(written.valid_written == 6);
    const ltfit::DatasetIndex index = ltfit::index_dataset(cifar_config(options.out_dir), 0, false);
    CHECK(index.layout == layout);
    CHECK(index.classes == std::vector<std::string>{"cat", "dog"});
    CHECK(index.train.size() == 12);
    CHECK(index.valid.size() == 6);
    int dogs = 0;
    for (const auto& s : index.train) dogs += static_cast<int>(s.label);
    CHECK(dogs == 6);
  }
  CHECK(fs::exists(dir.path() / "cifar10" / "cifar-10-batches-bin" / "data_batch_5.bin"));
}

TEST_CASE("cifar: the Python version is read as the binary one, and refused when malformed",
          "[data][cifar]") {
  TempDir dir;
  for (const std::string layout : {"cifar10", "cifar100"}) {
    INFO(layout);
    ltfit::SynthOptions options;
    options.out_dir = (dir.path() / layout).string();
    options.layout = layout;
    options.train = 10;
    options.valid = 4;
    ltfit::write_synthetic_dataset(options);
    const bool ten = layout == "cifar10";
    const fs::path bin = dir.path() / layout / (ten ? "cifar-10-batches-bin" : "cifar-100-binary");
    const fs::path py = dir.path() / layout / (ten ? "cifar-10-batches-py" : "cifar-100-python");
    const ltfit::DatasetIndex a = ltfit::index_dataset(cifar_config(bin), 0, false);
    const ltfit::DatasetIndex b = ltfit::index_dataset(cifar_config(py), 0, false);
    CHECK(b.layout == layout);
    CHECK(b.classes == a.classes);
    REQUIRE(b.train.size() == a.train.size());
    REQUIRE(b.valid.size() == a.valid.size());
    for (std::size_t i = 0; i < a.train.size(); ++i) {
      CHECK(b.train[i].label == a.train[i].label);
      CHECK(std::equal(a.train[i].image.data(), a.train[i].image.data() + a.train[i].image.bytes(),
                       b.train[i].image.data()));
    }
    CHECK_THAT(b.valid[3].path, Contains(ten ? "test_batch#3" : "test#3"));
  }
  // Only the Python version under the root: found in its archive folder.
  fs::remove_all(dir.path() / "cifar10" / "cifar-10-batches-bin");
  const fs::path root = dir.path() / "cifar10";
  const fs::path py = root / "cifar-10-batches-py";
  CHECK(ltfit::index_dataset(cifar_config(root), 0, false).layout == "cifar10");
  const std::string batch = ltfit::testing::read_file(py / "data_batch_1");
  SECTION("a truncated pickle") {
    write_file(py / "data_batch_1", batch.substr(0, batch.size() / 2));
    CHECK_THAT(cifar_index_error(root),
               Contains("data_batch_1' is not a pickled dict as CIFAR's Python version holds") &&
                   Contains("truncated pickle"));
  }
  SECTION("a foreign pickle: a list, or a dict without 'data'") {
    write_file(py / "data_batch_1", std::string("\x80\x02]q\x00.", 6));
    CHECK_THAT(cifar_index_error(root), Contains("data_batch_1") && Contains("it holds a list"));
    write_file(py / "data_batch_1", std::string("\x80\x02}q\x00.", 6));
    CHECK_THAT(cifar_index_error(root), Contains("it has no 'data' entry"));
  }
  SECTION("a pickle naming a global outside NumPy's rebuilders") {
    write_file(py / "data_batch_1", std::string("\x80\x02"
                                                "cos\nsystem\nX\x01\x00\x00\x00"
                                                "x\x85R.",
                                                22));
    CHECK_THAT(cifar_index_error(root), Contains("refused global 'os.system'"));
  }
  SECTION("labels that do not match the data") {
    // The synthetic batch's label list: 'labels' ] ( K l K l ... e: drop the last label.
    const std::size_t appends = batch.find('e', batch.find("labels") + 6);
    REQUIRE(appends != std::string::npos);
    std::string fewer = batch;
    fewer.erase(appends - 2, 2);
    write_file(py / "data_batch_1", fewer);
    CHECK_THAT(cifar_index_error(root), Contains("'labels' should list 2 class numbers"));
  }
  SECTION("a meta file without the class names") {
    write_file(py / "batches.meta", std::string("\x80\x02}q\x00.", 6));
    CHECK_THAT(cifar_index_error(root),
               Contains("batches.meta") && Contains("no 'label_names' entry"));
  }
}

TEST_CASE("ltfit trains and evaluates from CIFAR batches, and split.csv names the records",
          "[cli][cifar]") {
  TempDir dir;
  const auto synth = ltfit::testing::run_ltfit(
      "synth --layout cifar10 --train 48 --valid 16 --out " + (dir.path() / "c10").string());
  REQUIRE(synth.exit_code == 0);
  const std::string args =
      "train --config " + (ltfit::testing::source_dir() / "configs" / "quickstart.yaml").string() +
      " --set data.root=" + (dir.path() / "c10").string() +
      " --set run.out_dir=" + (dir.path() / "runs").string() +
      " --set run.name=c10 --set train.device=cpu --set data.image_size=32"
      " --set model.arch=resnet18 --set model.pretrained=none --set data.workers=1"
      " --set train.epochs=1 --set data.batch_size=8 --set data.layout=cifar10";
  const auto run = ltfit::testing::run_ltfit(args);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.output, Contains("cifar10"));
  const fs::path run_dir = dir.path() / "runs" / "c10";
  const auto summary = nlohmann::json::parse(ltfit::testing::read_file(run_dir / "summary.json"));
  CHECK(summary["train_skipped_images"] == 0);
  const std::string split = ltfit::testing::read_file(run_dir / "split.csv");
  CHECK_THAT(split, Contains("cifar-10-batches-bin/data_batch_1.bin#0,train,") &&
                        Contains("cifar-10-batches-bin/test_batch.bin#15,valid,"));
  // evaluate indexes the run's data as training did: the test batch, 16 records.
  const auto evaluate = ltfit::testing::run_ltfit("evaluate --checkpoint " +
                                                  (run_dir / "checkpoints" / "best.ckpt").string() +
                                                  " --out " + (dir.path() / "eval").string());
  INFO(evaluate.output);
  CHECK(evaluate.exit_code == 0);
  const std::string predictions =
      ltfit::testing::read_file(dir.path() / "eval" / "predictions.csv");
  CHECK_THAT(predictions, Contains("test_batch.bin#15"));
  // evaluate --data DIR recognises the batches too; --split train is the training batches.
  const auto train_split = ltfit::testing::run_ltfit(
      "evaluate --checkpoint " + (run_dir / "checkpoints" / "best.ckpt").string() + " --data " +
      (dir.path() / "c10").string() + " --split train --out " +
      (dir.path() / "eval-train").string());
  INFO(train_split.output);
  CHECK(train_split.exit_code == 0);
  CHECK_THAT(ltfit::testing::read_file(dir.path() / "eval-train" / "predictions.csv"),
             Contains("data_batch_5.bin#0"));

  // clean judges the records with the model, and its pictures show them (not grey squares);
  // --folds and --apply, which train on and move image files, refuse them.
  const std::string checkpoint = (run_dir / "checkpoints" / "best.ckpt").string();
  const auto clean = ltfit::testing::run_ltfit("clean --checkpoint " + checkpoint + " --out " +
                                               (dir.path() / "clean").string());
  INFO(clean.output);
  REQUIRE(clean.exit_code == 0);
  CHECK_THAT(ltfit::testing::read_file(dir.path() / "clean" / "suggestions.csv"),
             Contains(".bin#"));
  const cv::Mat picture = cv::imread((dir.path() / "clean" / "mislabeled.png").string());
  REQUIRE_FALSE(picture.empty());
  int colourful = 0;
  for (int y = 0; y < picture.rows; ++y) {
    for (int x = 0; x < picture.cols; ++x) {
      const cv::Vec3b p = picture.at<cv::Vec3b>(y, x);
      colourful += std::max({p[0], p[1], p[2]}) - std::min({p[0], p[1], p[2]}) > 30;
    }
  }
  CHECK(colourful > 1000);
  const auto folds =
      ltfit::testing::run_ltfit("clean --checkpoint " + checkpoint + " --folds 2 --out " +
                                (dir.path() / "clean-folds").string());
  CHECK(folds.exit_code == 2);
  CHECK_THAT(folds.output, Contains("clean --folds trains on image files"));
  const auto apply =
      ltfit::testing::run_ltfit("clean --checkpoint " + checkpoint + " --apply --out " +
                                (dir.path() / "clean-apply").string());
  CHECK(apply.exit_code == 2);
  CHECK_THAT(apply.output, Contains("nothing was moved"));
}

TEST_CASE("data.cifar_label: read, written back, warned about outside cifar100",
          "[config][cifar]") {
  const ltfit::Config coarse = ltfit::load_config_from_string(
      "data:\n  layout: cifar100\n  cifar_label: coarse\n", "t.yaml");
  CHECK(coarse.data.cifar_label == ltfit::CifarLabel::kCoarse);
  CHECK(ltfit::config_warnings(coarse).empty());
  CHECK(ltfit::load_config_from_string(ltfit::to_yaml(coarse), "t.yaml") == coarse);
  const ltfit::Config folders =
      ltfit::load_config_from_string("data:\n  layout: folders\n  cifar_label: coarse\n", "t.yaml");
  const auto warnings = ltfit::config_warnings(folders);
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Contains("data.cifar_label is coarse but is ignored: data.layout is not "
                                   "cifar100"));
  std::string refused = "(loaded)";
  try {
    ltfit::load_config_from_string("data:\n  cifar_label: medium\n", "t.yaml");
  } catch (const ltfit::ConfigError& e) {
    refused = e.what();
  }
  CHECK_THAT(refused,
             Contains("t.yaml:2: data.cifar_label: expected one of fine, coarse, got medium"));
}
