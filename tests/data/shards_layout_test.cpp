// The shards layout (layout_shards.cpp, tar_reader.cpp): WebDataset's tar files read by offset,
// never extracted. Samples are the members sharing a key, labelled by .cls (a number named by
// classes.txt, or a name) or .json; brace patterns expand as WebDataset's; the images decode
// through the loader as the same bytes written as files do; malformed shards, labels and
// patterns are refused naming the shard; and a run trains end to end from `ltfit synth --layout
// shards`.
#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>
#include <opencv2/imgcodecs.hpp>

#include "data/index_test_support.h"
#include "data/tar_reader.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/data/loader.h"
#include "ltfit/data/synth.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::layouts::ustar_archive;
using ltfit::testing::data_error_message;
using ltfit::testing::TempDir;
using ltfit::testing::write_file;

namespace {

using Members = std::vector<std::pair<std::string, std::string>>;

ltfit::DataConfig shards_config(const fs::path& root, const std::string& layout = "auto") {
  ltfit::DataConfig data;
  data.root = root.string();
  data.layout = ltfit::parse_data_layout(layout);
  return data;
}

std::string png_of(int value, int side = 16) {
  const cv::Mat image(side, side, CV_8UC3, cv::Scalar(value, 255 - value, value / 2));
  std::vector<uchar> bytes;
  REQUIRE(cv::imencode(".png", image, bytes));
  return {bytes.begin(), bytes.end()};
}

std::string shards_error(const fs::path& root) {
  return data_error_message([&] { ltfit::index_dataset(shards_config(root), 0, false); });
}

}  // namespace

TEST_CASE("shards: samples are the members sharing a key, read by offset", "[data][shards]") {
  TempDir dir;
  // train-000000.tar and train-000001.tar; a sample labelled by name, one by number (classes.txt),
  // one by JSON; an image without a label and a label without an image are left out and noted.
  write_file(dir.path() / "train-000000.tar", ustar_archive({{"a/x1.png", png_of(10)},
                                                             {"a/x1.cls", "1\n"},
                                                             {"x2.png", png_of(20)},
                                                             {"x2.json", R"({"label": "cat"})"},
                                                             {"x3.png", png_of(30)}}));
  write_file(dir.path() / "train-000001.tar", ustar_archive({{"y1.seg.png", png_of(40)},
                                                             {"y1.cls", "0"},
                                                             {"y2.cls", "1"},
                                                             {"y3.cls", "dog"},
                                                             {"y3.png", png_of(50)}}));
  write_file(dir.path() / "valid-000000.tar",
             ustar_archive({{"v1.png", png_of(60)}, {"v1.cls", "0"}}));
  write_file(dir.path() / "classes.txt", "cat\ndog\n");
  ltfit::DataConfig data = shards_config(dir.path());
  data.shards.train = "train-{000000..000001}.tar";
  const ltfit::DatasetIndex index = ltfit::index_dataset(data, 0, false);
  CHECK(index.layout == "shards");
  CHECK(index.split == "shards");
  CHECK(index.classes == std::vector<std::string>{"cat", "dog"});
  REQUIRE(index.train.size() == 4);
  REQUIRE(index.valid.size() == 1);
  const auto find = [&](const std::string& suffix) {
    for (const ltfit::Sample& s : index.train) {
      if (s.path.size() >= suffix.size() &&
          s.path.compare(s.path.size() - suffix.size(), suffix.size(), suffix) == 0) {
        return s;
      }
    }
    FAIL("no sample " << suffix);
    return ltfit::Sample{};
  };
  CHECK(find("train-000000.tar#a/x1.png").label == 1);
  CHECK(find("train-000000.tar#x2.png").label == 0);
  CHECK(find("train-000001.tar#y1.seg.png").label == 0);
  CHECK(find("train-000001.tar#y3.png").label == 1);
  const ltfit::Sample y3 = find("#y3.png");
  REQUIRE(y3.member);
  CHECK(y3.member.size == png_of(50).size());
  CHECK_FALSE(ltfit::is_image_file(y3));
  bool noted = false;
  for (const auto& note : index.notes) noted |= note.find("2 sample(s) without an image") == 0;
  CHECK(noted);

  // Through the loader at the image's own size: the pixels the PNG holds.
  ltfit::LoaderOptions options;
  options.data.image_size = 16;
  options.data.batch_size = 2;
  options.data.workers = 1;
  ltfit::Loader loader({y3, find("#x2.png")}, options);
  loader.start_epoch(0);
  const auto batch = loader.next();
  REQUIRE(batch);
  const auto image = batch->images[0].contiguous();
  const auto* rgb = image.data_ptr<std::uint8_t>();
  CHECK(int(rgb[0]) == 25);   // R: value / 2
  CHECK(int(rgb[1]) == 205);  // G: 255 - value
  CHECK(int(rgb[2]) == 50);   // B: value
  CHECK(loader.skipped().count == 0);
}

TEST_CASE("shards: no validation shard splits by valid_pct, and bad patterns and files are refused",
          "[data][shards]") {
  TempDir dir;
  Members members;
  for (int i = 0; i < 10; ++i) {
    members.emplace_back("s" + std::to_string(i) + ".png", png_of(i * 20));
    members.emplace_back("s" + std::to_string(i) + ".cls", i % 2 ? "dog" : "cat");
  }
  write_file(dir.path() / "train-000000.tar", ustar_archive(members));
  const ltfit::DatasetIndex index = ltfit::index_dataset(shards_config(dir.path()), 0, false);
  CHECK(index.layout == "shards");
  CHECK(index.split == "valid_pct");
  CHECK(index.train.size() + index.valid.size() == 10);

  ltfit::DataConfig data = shards_config(dir.path(), "shards");
  SECTION("a shard of a brace range that is missing") {
    data.shards.train = "train-{000000..000002}.tar";
    CHECK_THAT(data_error_message([&] { ltfit::index_dataset(data, 0, false); }),
               Contains("train-000001.tar") && Contains("does not exist"));
  }
  SECTION("a malformed pattern") {
    data.shards.train = "train-{000000..000002.tar";
    CHECK_THROWS_WITH(ltfit::index_dataset(data, 0, false),
                      Contains("data.shards.train") && Contains("a '{' without its '}'"));
    data.shards.train = "train-{9..1}.tar";
    CHECK_THROWS_WITH(ltfit::index_dataset(data, 0, false), Contains("ends before it starts"));
  }
  SECTION("a header whose checksum does not match") {
    std::string tar = ustar_archive(members);
    tar[3] = 'X';
    write_file(dir.path() / "train-000000.tar", tar);
    CHECK_THAT(shards_error(dir.path()),
               Contains("train-000000.tar' is not a readable tar archive") && Contains("checksum"));
  }
  SECTION("a member past the end of the file") {
    const std::string tar = ustar_archive(members);
    write_file(dir.path() / "train-000000.tar", tar.substr(0, 520));
    CHECK_THAT(shards_error(dir.path()), Contains("a member past the end at byte 0"));
  }
  SECTION("a class number past classes.txt, a label that is not a name") {
    write_file(dir.path() / "classes.txt", "cat\ndog\n");
    write_file(dir.path() / "train-000000.tar",
               ustar_archive({{"a.png", png_of(1)}, {"a.cls", "7"}}));
    CHECK_THAT(shards_error(dir.path()),
               Contains("train-000000.tar#a.cls") && Contains("class number 7"));
    write_file(dir.path() / "train-000000.tar",
               ustar_archive({{"a.png", png_of(1)}, {"a.json", "[1, 2]"}}));
    CHECK_THAT(shards_error(dir.path()), Contains("not a JSON object"));
  }
}

TEST_CASE("synth --layout shards trains end to end, and clean --apply refuses members",
          "[cli][shards]") {
  TempDir dir;
  const auto synth = ltfit::testing::run_ltfit(
      "synth --layout shards --train 40 --valid 12 --out " + (dir.path() / "s").string());
  INFO(synth.output);
  REQUIRE(synth.exit_code == 0);
  CHECK(fs::exists(dir.path() / "s" / "train-000000.tar"));
  CHECK(fs::exists(dir.path() / "s" / "valid-000000.tar"));
  const std::string args =
      "train --config " + (ltfit::testing::source_dir() / "configs" / "quickstart.yaml").string() +
      " --set data.root=" + (dir.path() / "s").string() +
      " --set run.out_dir=" + (dir.path() / "runs").string() +
      " --set run.name=s --set train.device=cpu --set data.image_size=32"
      " --set model.arch=resnet18 --set model.pretrained=none --set data.workers=1"
      " --set train.epochs=1 --set data.batch_size=8 --set data.layout=auto";
  const auto run = ltfit::testing::run_ltfit(args);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.output, Contains("shards layout, 40 train / 12 valid"));
  const fs::path run_dir = dir.path() / "runs" / "s";
  CHECK_THAT(ltfit::testing::read_file(run_dir / "split.csv"),
             Contains("train-000000.tar#000000.jpg,train,") &&
                 Contains("valid-000000.tar#000011.jpg,valid,"));
  const auto apply = ltfit::testing::run_ltfit("clean --checkpoint " +
                                               (run_dir / "checkpoints" / "best.ckpt").string() +
                                               " --apply --out " + (dir.path() / "clean").string());
  CHECK(apply.exit_code == 2);
  CHECK_THAT(apply.output, Contains("members of shards") && Contains("nothing was moved"));
}
