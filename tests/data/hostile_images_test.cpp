// Decompression bombs and files that are not files: each is skipped, counted and named, with no
// big allocation (every decode here runs in a child capped at 1 GiB of extra address space, so a
// regression fails the test rather than eating memory), and a training run among them finishes.
#include <sys/stat.h>
#include <unistd.h>

// LibTorch first: its c10 logging defines a CHECK macro that Catch's must replace.
#include <torch/torch.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "data/hostile_images.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/data/image_io.h"
#include "ltfit/data/loader.h"
#include "support/child_cap.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

constexpr std::uint64_t kHeadroom = 1ULL << 30;  // the child's address-space allowance

// The reason `path` is refused (or "decoded" if it is not), decoded in a capped child by the
// loader's square path or (eval) by predict --weights' eval transform, which decodes at full size.
ltfit::testing::CappedBody decode_capped(const std::string& path,
                                         const ltfit::ImageLimits& limits = {}, bool eval = false) {
  return ltfit::testing::run_capped(
      [&] {
        std::string error;
        const auto image = eval ? ltfit::load_eval_image(path, {256, 224}, &error, limits)
                                : ltfit::load_square_image(path, 64, {}, &error, limits);
        return image ? std::string("decoded") : error;
      },
      kHeadroom);
}

// A command prefix capping the ltfit child at 4 GiB of address space: plenty for a tiny run, far
// below what one bomb would take. None in sanitizer builds (see kAddressSpaceCapped).
std::string address_space_cap() {
  return ltfit::testing::kAddressSpaceCapped ? ltfit::testing::child_address_space_cap() : "";
}

struct Bomb {
  const char* name;
  std::string bytes;
  const char* reason;  // what the refusal must say
};

std::vector<Bomb> bombs() {
  using namespace ltfit::testing;
  return {
      {"progressive-40000.jpg", progressive_jpeg(40000, 40000),
       "image is 40000×40000 = 1600000000 pixels, over data.max_pixels (89478485); raise "
       "data.max_pixels to allow it"},
      {"baseline-65000.jpg", baseline_jpeg(65000, 65000),
       "image is 65000×65000 = 4225000000 pixels, over data.max_pixels"},
      {"strip-32000.tif", tiff_claiming(32000, 32000), "image is 32000×32000"},
      {"huge-30000.png", png_claiming(30000, 30000), "image is 30000×30000"},
      {"radiance.jpg", hdr_claiming(20000, 20000), "format hdr not in data.formats"},
      {"lossless-16384.webp", webp_claiming(16384, 16384), "image is 16384×16384"},
  };
}

}  // namespace

TEST_CASE("decompression bombs are refused from their header, before any decoder allocates",
          "[data][hostile][rlimit]") {
  ltfit::testing::TempDir dir;
  for (const Bomb& bomb : bombs()) {
    const fs::path path = dir.path() / bomb.name;
    ltfit::testing::write_file(path, bomb.bytes);
    for (const bool eval : {false, true}) {
      const auto run = decode_capped(path.string(), {}, eval);
      INFO(bomb.name << (eval ? " (eval transform, " : " (") << bomb.bytes.size() << " bytes): "
                     << run.output << "; peak RSS growth " << run.peak_rss_growth_kb << " kB");
      REQUIRE(run.exited);
      CHECK_THAT(run.output, Contains(bomb.reason));
      CHECK(run.peak_rss_growth_kb < 64 * 1024);  // nothing near the claimed size was touched
    }
  }
  // Allowing HDR leaves the pixel budget in force; lifting the budget lets a modest one through.
  ltfit::ImageLimits hdr_allowed;
  hdr_allowed.formats.push_back(ltfit::ImageFormat::kHdr);
  CHECK_THAT(decode_capped((dir.path() / "radiance.jpg").string(), hdr_allowed).output,
             Contains("image is 20000×20000 = 400000000 pixels, over data.max_pixels"));
}

TEST_CASE(
    "FIFOs, dangling links and directories named *.jpg are indexed, never opened, and "
    "skipped by name",
    "[data][hostile]") {
  ltfit::testing::TempDir dir, synth;
  const fs::path cat = dir.path() / "cat";
  const fs::path dog = dir.path() / "dog";
  const auto good = ltfit::testing::write_small_synth(synth.path(), 4, 2, 40, 60);
  fs::create_directories(cat);
  fs::create_directories(dog);
  fs::copy_file(good[0].path, cat / "good.jpg");
  fs::copy_file(good[1].path, dog / "good.jpg");
  REQUIRE(::mkfifo((cat / "fifo.jpg").c_str(), 0600) == 0);  // no writer: opening it would block
  fs::create_symlink(dir.path() / "nowhere.jpg", cat / "dangling.jpg");
  fs::create_directories(dog / "folder.jpg");
  const auto samples = ltfit::index_class_folders(dir.str(), {"cat", "dog"});
  std::vector<std::string> names;
  for (const auto& s : samples) names.push_back(fs::path(s.path).filename().string());
  CHECK(names ==
        std::vector<std::string>{"dangling.jpg", "fifo.jpg", "good.jpg", "folder.jpg", "good.jpg"});
  ltfit::LoaderOptions options;
  options.data.image_size = 32;
  options.data.batch_size = 2;
  options.data.workers = 2;
  ltfit::Loader loader(samples, options);
  loader.start_epoch(0);
  std::int64_t images = 0;
  while (auto batch = loader.next()) images += batch->labels.size(0);
  CHECK(images == 2);
  const auto skipped = loader.skipped();
  CHECK(skipped.count == 3);
  std::string all;
  for (const auto& e : skipped.examples) all += e + "\n";
  CHECK_THAT(all, Contains("fifo.jpg: is a FIFO (named pipe), not an image file; not opened"));
  CHECK_THAT(all, Contains("dangling.jpg: dangling symbolic link (to '" +
                           (dir.path() / "nowhere.jpg").string() + "')"));
  CHECK_THAT(all, Contains("folder.jpg: is a directory, not an image"));
}

TEST_CASE("a training run among bombs, FIFOs and dangling links finishes and counts them",
          "[data][hostile][cli]") {
  ltfit::testing::TempDir dir;
  const fs::path data = dir.path() / "data";
  REQUIRE(
      ltfit::testing::run_ltfit("synth --out " + data.string() + " --train 16 --valid 9 --seed 3")
          .exit_code == 0);
  int placed = 0;
  for (const Bomb& bomb : bombs()) {
    const char* cls = placed++ % 2 ? "dog" : "cat";
    ltfit::testing::write_file(data / "train" / cls / bomb.name, bomb.bytes);
  }
  REQUIRE(::mkfifo((data / "train/cat/fifo.jpg").c_str(), 0600) == 0);
  fs::create_symlink(dir.path() / "gone.jpg", data / "train/dog/dangling.jpg");
  fs::create_directories(data / "valid/dog/folder.jpg");
  const fs::path config = dir.path() / "c.yaml";
  // 9 valid images in batches of 8: the last evaluation batch holds one image.
  ltfit::testing::write_file(config,
                             "run: {name: hostile, out_dir: " + (dir.path() / "runs").string() +
                                 ", seed: 5}\n"
                                 "data: {root: " +
                                 data.string() +
                                 ", image_size: 32, batch_size: 8, workers: 4}\n"
                                 "model: {arch: resnet18, pretrained: none, head: linear}\n"
                                 "train: {recipe: one_cycle, epochs: 1, lr: 2.0e-3, device: cpu}\n"
                                 "eval: {tta: false}\n");
  // 4 GiB of address space is plenty for this run and far below what one bomb would take.
  const auto run =
      ltfit::testing::run_ltfit("train --json --config " + config.string(), address_space_cap());
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const auto summary = nlohmann::json::parse(run.stdout_text);
  CHECK(summary["skipped_images"] == 9);  // 6 bombs, a FIFO, a dangling link, a directory
  const std::string listed = summary["skipped_examples"].dump();
  for (const char* name : {"progressive-40000.jpg", "radiance.jpg", "fifo.jpg", "dangling.jpg",
                           "folder.jpg", "strip-32000.tif"}) {
    CHECK_THAT(listed, Contains(name));
  }
}

// Before the refill, the batch holding the unreadable image reached BatchNorm with one image and
// train exited 1 ("Expected more than 1 value per channel when training").
TEST_CASE("a training batch left with one readable image is refilled: train exits 0",
          "[data][loader][cli]") {
  ltfit::testing::TempDir dir;
  const fs::path data = dir.path() / "data";
  REQUIRE(ltfit::testing::run_ltfit("synth --out " + data.string() + " --train 4 --valid 4")
              .exit_code == 0);
  // 4 training images, batches of 2: whichever batch holds the broken one has one readable. Its
  // header is sound (a PNG without pixels), so it stays in the plan and only its decode fails.
  ltfit::testing::write_file(data / "train/cat/00000.jpg", ltfit::testing::png_claiming(32, 32));
  const fs::path config = dir.path() / "c.yaml";
  ltfit::testing::write_file(config,
                             "run: {name: one, out_dir: " + (dir.path() / "runs").string() +
                                 "}\n"
                                 "data: {root: " +
                                 data.string() +
                                 ", image_size: 32, batch_size: 2, workers: 2}\n"
                                 "model: {arch: resnet18, pretrained: none, head: fastai}\n"
                                 "train: {recipe: one_cycle, epochs: 1, lr: 2.0e-3, device: cpu}\n"
                                 "eval: {tta: false}\n");
  const auto run =
      ltfit::testing::run_ltfit("train --json --config " + config.string(), address_space_cap());
  INFO(run.output);
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.output, Contains("00000.jpg"));
  // And a batch size of one is refused before anything runs.
  const auto one =
      ltfit::testing::run_ltfit("train --config " + config.string() + " --set data.batch_size=1");
  CHECK(one.exit_code == 2);
  CHECK_THAT(one.output, Contains("data.batch_size") && Contains("BatchNorm needs at least 2"));
}
