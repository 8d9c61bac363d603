// data.cache: ram (ltfit/data/decode_cache.h): the same batches as without the cache, images from
// memory after the first epoch, the bound kept (and the batches still the same when it is
// reached), a new decode when a request needs more pixels, the config keys. Tagged [loader]:
// the TSan step runs them (the cache is shared by the loader threads).
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <opencv2/imgcodecs.hpp>

#include "data/decode.h"
#include "ltfit/config/config_loader.h"
#include "ltfit/data/decode_cache.h"
#include "ltfit/data/loader.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace {

ltfit::LoaderOptions cache_options(bool train,
                                   ltfit::AugmentPlace on = ltfit::AugmentPlace::kHost) {
  ltfit::LoaderOptions o;
  o.data.augment.on = on;
  o.data.image_size = 40;
  o.data.batch_size = 5;
  o.train = train;
  o.seed = 4;
  o.data.workers = 2;
  o.data.augment.max_zoom = 1.1;  // draws that need more pixels than others
  return o;
}

// Every batch of `epochs` epochs.
std::vector<ltfit::Batch> epochs_of(ltfit::Loader& loader, int epochs) {
  std::vector<ltfit::Batch> batches;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    loader.start_epoch(epoch);
    while (auto b = loader.next()) batches.push_back(*b);
  }
  return batches;
}

void check_same_batches(const std::vector<ltfit::Batch>& a, const std::vector<ltfit::Batch>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].indices == b[i].indices);
    CHECK(torch::equal(a[i].images, b[i].images));
  }
}

}  // namespace

TEST_CASE("data.cache ram: the same batches as without it, from memory after the first epoch",
          "[data][loader][cache]") {
  ltfit::testing::TempDir dir;
  // 150-260 px JPEGs for 40-px crops: decoded at 1/4 or 1/2, whole (with the cache) or only
  // the part the warp reads (without): the pixels used are the same.
  const auto samples = ltfit::testing::write_small_synth(dir.path(), 24, 6, 150, 260, 3);
  for (const bool train : {true, false}) {
    INFO((train ? "training" : "validation") << " loader");
    ltfit::Loader plain(samples, cache_options(train));
    ltfit::LoaderOptions cached_options = cache_options(train);
    cached_options.cache = ltfit::make_decoded_image_cache(1ULL << 30);
    ltfit::Loader cached(samples, cached_options);
    check_same_batches(epochs_of(plain, 3), epochs_of(cached, 3));
    const ltfit::DecodedImageCacheStats s = ltfit::decoded_image_cache_stats(*cached_options.cache);
    const std::uint64_t per_epoch = train ? 20 : 24;  // training drops the last partial batch
    CHECK(s.hits + s.misses == 3 * per_epoch);
    CHECK(s.misses == s.images);  // each image decoded once, then kept
    CHECK(s.images <= 24);
    CHECK(s.hits >= 3 * per_epoch - 24);
    CHECK(s.not_kept == 0);
    CHECK(s.bytes > 0);
    CHECK(s.bytes <= s.capacity);
  }
}

TEST_CASE("data.cache ram with data.augment.on device: the same crops as without it",
          "[data][loader][cache]") {
  ltfit::testing::TempDir dir;
  const auto samples = ltfit::testing::write_small_synth(dir.path(), 15, 3, 150, 260, 8);
  const auto device = ltfit::AugmentPlace::kDevice;
  ltfit::Loader plain(samples, cache_options(true, device));
  ltfit::LoaderOptions options = cache_options(true, device);
  options.cache = ltfit::make_decoded_image_cache(1ULL << 30);
  ltfit::Loader cached(samples, options);
  check_same_batches(epochs_of(plain, 2), epochs_of(cached, 2));
  const ltfit::DecodedImageCacheStats s = ltfit::decoded_image_cache_stats(*options.cache);
  CHECK(s.hits == 15);  // the second epoch: every image from memory
  CHECK(s.misses == 15);
}

TEST_CASE("data.cache ram: a full cache keeps what fits, decodes the rest, same batches",
          "[data][loader][cache]") {
  ltfit::testing::TempDir dir;
  const auto samples = ltfit::testing::write_small_synth(dir.path(), 24, 6, 150, 260, 5);
  ltfit::Loader plain(samples, cache_options(true));
  ltfit::LoaderOptions options = cache_options(true);
  const std::uint64_t capacity = 3 * 130 * 130 * 3;  // about three images at 1/2 scale
  options.cache = ltfit::make_decoded_image_cache(capacity);
  ltfit::Loader cached(samples, options);
  check_same_batches(epochs_of(plain, 2), epochs_of(cached, 2));
  const ltfit::DecodedImageCacheStats s = ltfit::decoded_image_cache_stats(*options.cache);
  CHECK(s.bytes <= capacity);
  CHECK(s.images >= 1);
  CHECK(s.images < 24);
  CHECK(s.not_kept > 0);
  CHECK(s.hits + s.misses == 40);
}

TEST_CASE("decode_bgr_cached: a request for more pixels decodes again and replaces the entry",
          "[data][loader][cache]") {
  ltfit::testing::TempDir dir;
  const std::string path = (dir.path() / "big.jpg").string();
  cv::Mat image(400, 480, CV_8UC3, cv::Scalar(10, 200, 30));
  REQUIRE(cv::imwrite(path, image));
  const auto cache = ltfit::make_decoded_image_cache(1ULL << 30);
  std::string error;
  const auto decode = [&](double side) {
    const ltfit::DecodedImage d =
        ltfit::decode_bgr_cached(path, {side, {}}, {}, cache.get(), &error);
    INFO(error);
    REQUIRE_FALSE(d.image.empty());
    return d.whole;
  };
  CHECK(decode(40) == cv::Size(60, 50));     // 1/8
  CHECK(decode(45) == cv::Size(60, 50));     // still 1/8: a hit
  CHECK(decode(120) == cv::Size(240, 200));  // 1/2: decoded again
  CHECK(decode(40) == cv::Size(60, 50));     // 1/8 again: not the kept 1/2
  const ltfit::DecodedImageCacheStats s = ltfit::decoded_image_cache_stats(*cache);
  CHECK(s.hits == 1);
  CHECK(s.misses == 3);
  CHECK(s.images == 1);
  CHECK(s.bytes == 60 * 50 * 3);
  // An unreadable file is not kept, and its reason comes through.
  const std::string missing = (dir.path() / "missing.jpg").string();
  CHECK(ltfit::decode_bgr_cached(missing, {40, {}}, {}, cache.get(), &error).image.empty());
  CHECK(error == "file not found");
  CHECK(ltfit::decoded_image_cache_stats(*cache).images == 1);
}

TEST_CASE("config: data.cache and data.cache_bytes", "[config][cache]") {
  using ltfit::load_config_from_string;
  const ltfit::Config defaults = load_config_from_string("data:\n", "t.yaml");
  CHECK(defaults.data.cache == ltfit::DataCache::kNone);
  CHECK(defaults.data.cache_bytes == 4ULL << 30);
  const ltfit::Config ram =
      load_config_from_string("data:\n  cache: ram\n  cache_bytes: 512MiB\n", "t.yaml");
  CHECK(ram.data.cache == ltfit::DataCache::kRam);
  CHECK(ram.data.cache_bytes == 512ULL << 20);
  for (const auto& [text, bytes] :
       std::vector<std::pair<std::string, std::uint64_t>>{{"1073741824", 1ULL << 30},
                                                          {"4GB", 4000000000ULL},
                                                          {"2 GiB", 2ULL << 30},
                                                          {"1TiB", 1ULL << 40},
                                                          {"300KB", 300000},
                                                          {"7B", 7}}) {
    INFO(text);
    CHECK(load_config_from_string("data:\n  cache_bytes: " + text + "\n", "t.yaml")
              .data.cache_bytes == bytes);
  }
  for (const std::string bad : {"0", "lots", "-5", "4 GiBs", "99999999999TiB", "[1]", "1.5GiB"}) {
    INFO(bad);
    try {
      load_config_from_string("data:\n  cache_bytes: " + bad + "\n", "t.yaml");
      FAIL("accepted");
    } catch (const ltfit::ConfigError& e) {
      CHECK_THAT(e.what(), Catch::Contains("data.cache_bytes"));
      CHECK_THAT(e.what(), Catch::Contains("4GiB"));
    }
  }
  try {
    load_config_from_string("data:\n  cache: disk\n", "t.yaml");
    FAIL("accepted");
  } catch (const ltfit::ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("data.cache"));
    CHECK_THAT(e.what(), Catch::Contains("ram"));
  }
}
