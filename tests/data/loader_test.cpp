// The batching loader: determinism across worker counts, epochs, errors, bad input, shutdown.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <opencv2/imgcodecs.hpp>
#include <set>
#include <thread>

#include "data/hostile_images.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/data/decode_budget.h"
#include "ltfit/data/loader.h"
#include "ltfit/data/synth.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

using ltfit::testing::threads_named;

namespace fs = std::filesystem;

namespace {

std::vector<ltfit::Sample> small_set(const ltfit::testing::TempDir& dir, int train = 24) {
  return ltfit::testing::write_small_synth(dir.path(), train, 4, 60, 90, /*seed=*/11);
}

ltfit::LoaderOptions train_options(int workers) {
  ltfit::LoaderOptions o;
  o.data.image_size = 40;
  o.data.batch_size = 5;
  o.train = true;
  o.seed = 9;
  o.data.workers = workers;
  return o;
}

std::vector<ltfit::Batch> one_epoch(ltfit::Loader& loader, int epoch) {
  std::vector<ltfit::Batch> batches;
  loader.start_epoch(epoch);
  while (auto b = loader.next()) batches.push_back(*b);
  return batches;
}

}  // namespace

TEST_CASE("1 and 4 workers yield identical batches - epochs differ", "[data][loader]") {
  ltfit::testing::TempDir dir;
  const auto samples = small_set(dir);
  ltfit::Loader one(samples, train_options(1));
  ltfit::Loader four(samples, train_options(4));
  CHECK(four.workers() == 4);
  const auto a = one_epoch(one, 3);
  const auto b = one_epoch(four, 3);
  REQUIRE(a.size() == 4);  // 24 images / 5 with drop_last
  REQUIRE(b.size() == a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].indices == b[i].indices);
    CHECK(torch::equal(a[i].images, b[i].images));
    CHECK(torch::equal(a[i].labels, b[i].labels));
  }
  const auto c = one_epoch(one, 4);
  CHECK(c[0].indices != a[0].indices);  // a new shuffle each epoch
  // Restarting an epoch mid-way discards what was in flight and starts over identically.
  four.start_epoch(3);
  four.next();
  const auto again = one_epoch(four, 3);
  CHECK(torch::equal(again[0].images, a[0].images));
}

TEST_CASE("validation batches keep order, keep the last partial batch, centre-crop",
          "[data][loader]") {
  ltfit::testing::TempDir dir;
  const auto samples = small_set(dir, 12);
  ltfit::LoaderOptions options = train_options(2);
  options.train = false;
  ltfit::Loader loader(samples, options);
  const auto batches = one_epoch(loader, 0);
  REQUIRE(batches.size() == 3);  // 5 + 5 + 2
  CHECK(batches[2].labels.size(0) == 2);
  CHECK(batches[0].indices == std::vector<std::int64_t>{0, 1, 2, 3, 4});
  CHECK(batches[0].images.sizes() == torch::IntArrayRef({5, 40, 40, 3}));
  CHECK(batches[0].images.scalar_type() == torch::kUInt8);
  const auto again = one_epoch(loader, 7);  // no augmentation: every epoch the same
  CHECK(torch::equal(again[1].images, batches[1].images));
}

TEST_CASE("an exception in a worker reaches the consumer naming the image", "[data][loader]") {
  ltfit::testing::TempDir dir;
  const auto samples = small_set(dir);
  ltfit::LoaderOptions options = train_options(2);
  const std::string victim = samples[7].path;
  options.before_load = [victim](const std::string& path) {
    if (path == victim) throw std::runtime_error("injected failure");
  };
  ltfit::Loader loader(samples, options);
  loader.start_epoch(0);
  try {
    while (loader.next()) {
    }
    FAIL("the injected failure did not surface");
  } catch (const ltfit::DataError& e) {
    CHECK_THAT(e.what(),
               Catch::Matchers::Contains(victim) && Catch::Matchers::Contains("injected failure"));
  }
  // The loader is still usable and shuts down cleanly (its destructor joins the workers).
  loader.start_epoch(1);
}

TEST_CASE("destroying a loader mid-epoch joins its workers", "[data][loader]") {
  ltfit::testing::TempDir dir;
  const auto samples = small_set(dir);
  for (int i = 0; i < 5; ++i) {
    ltfit::Loader loader(samples, train_options(3));
    loader.start_epoch(i);
    loader.next();
  }
  SUCCEED("no hang, no crash");
}

TEST_CASE("loader threads are named ltfit-loader while they run", "[data][loader]") {
  ltfit::testing::TempDir dir;
  const auto samples = small_set(dir);
  REQUIRE(threads_named("ltfit-loader") == 0);
  {
    ltfit::Loader loader(samples, train_options(3));
    loader.start_epoch(0);
    REQUIRE(loader.next().has_value());
    // Each worker names itself when it first runs: wait for all three.
    for (int tries = 0; tries < 500 && threads_named("ltfit-loader") < 3; ++tries) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK(threads_named("ltfit-loader") == 3);
  }
  CHECK(threads_named("ltfit-loader") == 0);  // joined
}

// A worker's tensor work at 224 px is wide enough for LibTorch to start an OpenMP team, whose
// helper threads a worker would keep (named after it) and which would make libgomp throttle the
// training step's own team (util/intra_op_threads.h): the workers run it on one thread.
TEST_CASE("loader workers start no OpenMP helper threads of their own", "[data][loader]") {
  ltfit::testing::TempDir dir;
  const auto samples = ltfit::testing::write_small_synth(dir.path(), 16, 4, 240, 300, 5);
  ltfit::LoaderOptions options = train_options(2);
  options.data.image_size = 224;
  options.data.batch_size = 8;
  {
    ltfit::Loader loader(samples, options);
    CHECK(one_epoch(loader, 0).size() == 2);
    CHECK(threads_named("ltfit-loader") == 2);
  }
  CHECK(threads_named("ltfit-loader") == 0);
}

TEST_CASE("the bad-input zoo is skipped, counted and named - good odd sizes decode",
          "[data][loader]") {
  ltfit::testing::TempDir dir;
  auto samples = small_set(dir, 10);
  const fs::path zoo = dir.path() / "zoo";
  fs::create_directories(zoo);
  ltfit::testing::write_file(zoo / "empty.jpg", "");
  ltfit::testing::write_file(zoo / "text.jpg", "hello, I am not an image\n");
  std::string noise(4096, '\0');
  for (std::size_t i = 0; i < noise.size(); ++i) noise[i] = static_cast<char>((i * 7919) % 251);
  ltfit::testing::write_file(zoo / "noise.jpg", noise);
  const std::string good = ltfit::testing::read_file(samples[0].path);
  ltfit::testing::write_file(zoo / "truncated.jpg", good.substr(0, good.size() / 2));
  cv::imwrite((zoo / "tiny.png").string(), cv::Mat(1, 1, CV_8UC3, cv::Scalar(10, 200, 30)));
  cv::imwrite((zoo / "huge.jpg").string(), cv::Mat(10000, 10000, CV_8UC3, cv::Scalar(90, 90, 90)));
  for (const char* name :
       {"empty.jpg", "text.jpg", "noise.jpg", "truncated.jpg", "tiny.png", "huge.jpg"}) {
    samples.push_back({(zoo / name).string(), 0});
  }
  ltfit::LoaderOptions options = train_options(2);
  options.data.batch_size = 4;
  options.data.max_pixels = 100'000'000;  // huge.jpg is 10000x10000: raised to allow it
  ltfit::Loader loader(samples, options);
  std::int64_t images = 0;
  for (const auto& b : one_epoch(loader, 0)) {
    CHECK(b.labels.size(0) == 4);
    images += b.labels.size(0);
  }
  // The 12 readable images, once each: unreadable files leave the epoch's plan (before, the
  // readable ones were repeated to fill 16 places, 4 batches of 4).
  CHECK(images == 12);
  const auto skipped = loader.skipped();
  CHECK(skipped.count == 4);
  std::string all;
  for (const auto& e : skipped.examples) all += e + "\n";
  for (const char* name : {"empty.jpg", "text.jpg", "noise.jpg", "truncated.jpg"}) {
    CHECK_THAT(all, Catch::Matchers::Contains(name));
  }
  CHECK_THAT(all, !Catch::Matchers::Contains("tiny.png") && !Catch::Matchers::Contains("huge.jpg"));
  // Another epoch does not count them twice.
  one_epoch(loader, 1);
  CHECK(loader.skipped().count == 4);
}

TEST_CASE("sample seeds and worker counts", "[data][loader]") {
  CHECK(ltfit::sample_seed(1, 0, 5) == ltfit::sample_seed(1, 0, 5));
  CHECK(ltfit::sample_seed(1, 0, 5) != ltfit::sample_seed(1, 1, 5));
  CHECK(ltfit::sample_seed(1, 0, 5) != ltfit::sample_seed(2, 0, 5));
  CHECK(ltfit::default_worker_count() >= 1);
  CHECK(ltfit::default_worker_count() == ltfit::available_cores());
}

TEST_CASE("normalisation: ImageNet mean/std, NCHW view, equal to the tensor formula",
          "[data][loader]") {
  const torch::Tensor images = torch::randint(0, 256, {2, 5, 7, 3}, torch::kUInt8);
  const torch::Tensor mean = torch::tensor({0.485f * 255.f, 0.456f * 255.f, 0.406f * 255.f});
  const torch::Tensor inv_std =
      torch::tensor({1.f / (0.229f * 255.f), 1.f / (0.224f * 255.f), 1.f / (0.225f * 255.f)});
  const torch::Tensor expected =
      ((images.to(torch::kFloat32) - mean) * inv_std).permute({0, 3, 1, 2}).contiguous();
  const torch::Tensor nchw = ltfit::normalize_images(images, torch::kCPU, false);
  CHECK(nchw.sizes() == torch::IntArrayRef({2, 3, 5, 7}));
  CHECK(nchw.is_contiguous());
  CHECK(torch::equal(nchw, expected));
  const torch::Tensor nhwc = ltfit::normalize_images(images, torch::kCPU, true);
  CHECK(nhwc.is_contiguous(torch::MemoryFormat::ChannelsLast));
  CHECK(torch::equal(nhwc.contiguous(), expected));
}

TEST_CASE("starting an epoch at batch k yields exactly the uninterrupted epoch's batches from k",
          "[data][loader]") {
  ltfit::testing::TempDir dir;
  const auto samples = small_set(dir);
  ltfit::Loader loader(samples, train_options(2));
  const auto full = one_epoch(loader, 2);
  REQUIRE(full.size() == 4);
  loader.start_epoch(2, /*skip_batches=*/3);
  auto resumed = loader.next();
  REQUIRE(resumed);
  CHECK(resumed->indices == full[3].indices);
  CHECK(torch::equal(resumed->images, full[3].images));
  CHECK_FALSE(loader.next());
  loader.start_epoch(2, /*skip_batches=*/99);  // past the end: an empty epoch, not an error
  CHECK_FALSE(loader.next());
}

TEST_CASE("augment_in_order: every sample in order, augmented per epoch (TTA v2 passes)",
          "[data][loader]") {
  ltfit::testing::TempDir dir;
  const auto samples = small_set(dir, 12);
  ltfit::LoaderOptions options = train_options(2);
  options.train = false;
  options.augment_in_order = true;
  ltfit::Loader augmented(samples, options);
  options.augment_in_order = false;
  ltfit::Loader plain(samples, options);
  const auto pass0 = one_epoch(augmented, 0);
  const auto pass1 = one_epoch(augmented, 1);
  const auto centre = one_epoch(plain, 0);
  REQUIRE(pass0.size() == centre.size());  // no drop_last: 12 samples / 5 -> 3 batches
  CHECK(pass0.size() == 3);
  CHECK(pass0.back().labels.size(0) == 2);
  for (std::size_t i = 0; i < pass0.size(); ++i) CHECK(pass0[i].indices == centre[i].indices);
  CHECK_FALSE(torch::equal(pass0[0].images, centre[0].images));
  CHECK_FALSE(torch::equal(pass0[0].images, pass1[0].images));
  CHECK(torch::equal(pass0[0].images, one_epoch(augmented, 0)[0].images));
}

TEST_CASE("the huge image is refused by default, naming data.max_pixels", "[data][loader]") {
  ltfit::testing::TempDir dir;
  ltfit::testing::write_file(dir.path() / "huge.jpg", ltfit::testing::baseline_jpeg(9000, 10000));
  ltfit::LoaderOptions options = train_options(1);
  options.train = false;
  ltfit::Loader loader({{(dir.path() / "huge.jpg").string(), 0}}, options);
  CHECK(one_epoch(loader, 0).empty());
  REQUIRE(loader.skipped().examples.size() == 1);
  CHECK_THAT(loader.skipped().examples[0],
             Catch::Matchers::Contains("image is 9000×10000 = 90000000 pixels, over "
                                       "data.max_pixels (89478485)"));
}

namespace {

// Aborts the test binary if not disarmed within `seconds`: a hang fails loudly, not forever.
class Watchdog {
 public:
  Watchdog(int seconds, std::string what)
      : thread_([this, seconds, what = std::move(what)] {
          std::unique_lock lock(mutex_);
          if (!done_cv_.wait_for(lock, std::chrono::seconds(seconds), [&] { return done_; })) {
            std::fprintf(stderr, "HANG: %s did not finish within %d s\n", what.c_str(), seconds);
            std::abort();
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    done_cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

// Before the fix a worker read the thread list while the constructor was still filling it (a
// data race ThreadSanitizer reports on the first construction); with one worker it could read a
// prefetch depth of 0 and next() then waited forever. Run under the tsan preset in CI.
TEST_CASE("loaders constructed, run and destroyed many times never hang or race",
          "[data][loader][tsan]") {
  ltfit::testing::TempDir dir;
  const auto samples = ltfit::testing::write_small_synth(dir.path(), 2, 2, 32, 36, /*seed=*/5);
  ltfit::LoaderOptions options;
  options.data.image_size = 16;
  options.data.batch_size = 2;
  Watchdog watchdog(120, "the loader construction stress");
  for (int i = 0; i < 1500; ++i) {
    options.data.workers = 1 + i % 3;
    options.train = i % 2 == 0;
    ltfit::Loader loader(samples, options);
    for (int epoch = 0; epoch < 2; ++epoch) {
      loader.start_epoch(epoch);
      while (loader.next()) {
      }
    }
    if (i % 5 == 0) {  // destroyed with work in flight, too
      loader.start_epoch(9);
    }
  }
  SUCCEED("no hang");
}

TEST_CASE("a loader thread that cannot start is a RuntimeError, not an abort",
          "[data][loader][rlimit]") {
  if (!ltfit::testing::kThreadRefusalReachesCode) {
    WARN(
        "skipped: in a sanitizer build a thread refused by the address-space cap dies inside "
        "the sanitizer's runtime, before our code sees the refusal");
    return;
  }
  ltfit::testing::TempDir dir;
  const auto samples = small_set(dir, 4);
  // 256 threads need far more stack than a 64 MiB address-space allowance gives.
  const auto run = ltfit::testing::run_capped(
      [&] {
        ltfit::LoaderOptions options = train_options(256);
        try {
          ltfit::Loader loader(samples, options);
          return std::string("started");
        } catch (const ltfit::RuntimeError& e) {
          return "RuntimeError " + std::to_string(static_cast<int>(e.exit_code())) + ": " +
                 e.what() + " | " + e.hint();
        }
      },
      64ULL << 20);
  INFO(run.output);
  CHECK(run.exited);  // before the fix: std::terminate (SIGABRT) with threads left joinable
  CHECK_THAT(run.output, Catch::Matchers::StartsWith("RuntimeError 5: could not start loader "
                                                     "thread") &&
                             Catch::Matchers::Contains("of 256") &&
                             Catch::Matchers::Contains("lower data.workers"));
}

TEST_CASE("worker count and training batch size are bounded", "[data][loader]") {
  ltfit::testing::TempDir dir;
  const auto samples = small_set(dir, 4);
  CHECK_THROWS_WITH(ltfit::Loader(samples, train_options(257)),
                    Catch::Matchers::Contains("data.workers: expected auto or an integer from 1 "
                                              "to 256, got 257"));
  ltfit::LoaderOptions one = train_options(1);
  one.data.batch_size = 1;
  CHECK_THROWS_AS(ltfit::Loader(samples, one), ltfit::ConfigError);
  CHECK_THROWS_WITH(ltfit::Loader(samples, one),
                    Catch::Matchers::Contains("BatchNorm needs at least 2"));
  one.train = false;  // evaluation in batches of one is fine
  ltfit::Loader eval(samples, one);
  const auto batches = one_epoch(eval, 0);
  REQUIRE(batches.size() == samples.size());
  for (const auto& b : batches) CHECK(b.labels.size(0) == 1);
  CHECK(ltfit::default_worker_count() <= ltfit::kMaxLoaderWorkers);
}

TEST_CASE("training batches that lost images are refilled the same way on every run",
          "[data][loader]") {
  ltfit::testing::TempDir dir;
  auto samples = small_set(dir, 12);
  // Every other sample fails to decode: before the refill, batches of 1 reached BatchNorm. Their
  // headers are sound (a PNG without its pixels), so the header check keeps them in the plan and
  // only the decode finds them unreadable (a file the header check refuses leaves the plan:
  // readable_images_test.cpp).
  for (int i = 0; i < 12; i += 2) {
    ltfit::testing::write_file(samples[static_cast<std::size_t>(i)].path,
                               ltfit::testing::png_claiming(64, 64));
  }
  ltfit::LoaderOptions options = train_options(1);
  options.data.batch_size = 2;
  ltfit::Loader one(samples, options);
  options.data.workers = 3;
  ltfit::Loader three(samples, options);
  const auto a = one_epoch(one, 4);
  const auto b = one_epoch(three, 4);
  REQUIRE(a.size() == 6);
  REQUIRE(b.size() == a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].labels.size(0) == 2);
    CHECK(a[i].indices == b[i].indices);
    CHECK(torch::equal(a[i].images, b[i].images));
  }
  CHECK(one.skipped().count == 6);
  // Resuming at batch 3 rebuilds batches 3.. exactly.
  three.start_epoch(4, /*skip_batches=*/3);
  for (std::size_t i = 3; i < a.size(); ++i) {
    const auto resumed = three.next();
    REQUIRE(resumed);
    CHECK(resumed->indices == a[i].indices);
    CHECK(torch::equal(resumed->images, a[i].images));
  }
  CHECK_FALSE(three.next());
}

TEST_CASE("images whose decoding failed are reported and leave the epochs planned after",
          "[data][loader]") {
  ltfit::testing::TempDir dir;
  auto samples = small_set(dir, 20);
  const std::vector<std::int64_t> broken = {3, 11, 17};  // sound headers, no pixels
  for (const std::int64_t i : broken) {
    ltfit::testing::write_file(samples[static_cast<std::size_t>(i)].path,
                               ltfit::testing::png_claiming(64, 64));
  }
  ltfit::LoaderOptions options = train_options(2);  // batches of 5
  ltfit::Loader loader(samples, options);
  REQUIRE(loader.batches_per_epoch() == 4);  // 20 pass the header check
  const auto first = one_epoch(loader, 0);
  REQUIRE(first.size() == 4);
  for (const auto& b : first) CHECK(b.labels.size(0) == 5);  // refilled from later images
  CHECK(loader.found_unreadable() == broken);
  loader.leave_out(broken);
  CHECK(loader.planned() == 17);
  const auto second = one_epoch(loader, 1);
  CHECK(loader.batches_per_epoch() == 4);  // the schedule's length stays
  CHECK(loader.epoch_batch_count() == 3);  // 17 images: 3 full batches
  REQUIRE(second.size() == 3);
  std::set<std::int64_t> seen;
  for (const auto& b : second) {
    CHECK(b.labels.size(0) == 5);
    for (const std::int64_t i : b.indices) {
      CHECK(seen.insert(i).second);  // no image twice: nothing stands in for the broken ones
      CHECK(std::find(broken.begin(), broken.end(), i) == broken.end());
    }
  }
  // The plan depends on the set left out alone: another loader told the same plans the same.
  ltfit::Loader other(samples, options);
  other.leave_out(broken);
  const auto again = one_epoch(other, 1);
  REQUIRE(again.size() == second.size());
  for (std::size_t i = 0; i < again.size(); ++i) CHECK(again[i].indices == second[i].indices);
  CHECK(other.found_unreadable().empty());  // never decoded them
  // A new set replaces the old one.
  loader.leave_out({});
  CHECK(loader.planned() == 20);
}

TEST_CASE("an epoch with a single readable image drops its training batches and counts them",
          "[data][loader]") {
  ltfit::testing::TempDir dir;
  auto samples = small_set(dir, 4);
  for (int i = 1; i < 4; ++i) {  // sound headers, no pixels: only decoding finds them unreadable
    ltfit::testing::write_file(samples[static_cast<std::size_t>(i)].path,
                               ltfit::testing::png_claiming(64, 64));
  }
  ltfit::LoaderOptions options = train_options(2);
  options.data.batch_size = 2;
  ltfit::Loader loader(samples, options);
  CHECK(one_epoch(loader, 0).empty());  // no batch of one reaches the model
  CHECK(loader.skipped().dropped_batches == 2);
  CHECK(loader.skipped().count == 3);
}

TEST_CASE("decode memory stays within the shared budget whatever the worker count",
          "[data][loader]") {
  ltfit::testing::TempDir dir;
  const auto samples = small_set(dir, 24);  // 60-90 px JPEGs: ~50 kB estimated each
  ltfit::LoaderOptions options = train_options(4);
  options.train = false;
  options.decode_budget = std::make_shared<ltfit::DecodeBudget>(100'000);
  ltfit::Loader loader(samples, options);
  const auto batches = one_epoch(loader, 0);
  std::int64_t images = 0;
  for (const auto& b : batches) images += b.labels.size(0);
  CHECK(images == 24);
  CHECK(options.decode_budget->peak() > 0);
  CHECK(options.decode_budget->peak() <= 100'000);
  CHECK(options.decode_budget->in_use() == 0);
  // A budget smaller than any one image: each still decodes, alone.
  options.decode_budget = std::make_shared<ltfit::DecodeBudget>(1);
  ltfit::Loader alone(samples, options);
  images = 0;
  for (const auto& b : one_epoch(alone, 0)) images += b.labels.size(0);
  CHECK(images == 24);
  CHECK(options.decode_budget->peak() < 200'000);  // never two at once
}

TEST_CASE("the decode budget serves in arrival order and lets an oversized request run alone",
          "[data][loader]") {
  ltfit::DecodeBudget budget(100);
  auto a = budget.acquire(60);
  CHECK(budget.in_use() == 60);
  std::atomic<int> big_done{0};
  std::atomic<std::uint64_t> big_saw{0};
  std::atomic<int> small_saw_big_done{-1};
  std::thread big([&] {
    auto lease = budget.acquire(500);  // larger than the budget: waits until nothing is held
    big_saw = budget.in_use();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    big_done = 1;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(big_done == 0);
  std::thread small([&] {
    auto lease = budget.acquire(10);  // would fit beside the 60, but the big one came first
    small_saw_big_done = big_done.load();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(budget.in_use() == 60);
  a = ltfit::DecodeBudget::Lease();  // releases the 60
  big.join();
  small.join();
  CHECK(big_saw == 500);           // it ran alone
  CHECK(small_saw_big_done == 1);  // and before the later, smaller request
  CHECK(budget.in_use() == 0);
  CHECK(budget.peak() == 500);
}
