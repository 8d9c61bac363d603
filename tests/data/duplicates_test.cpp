// Exact and near duplicates (duplicates.h): planted copies of generated pictures (byte copies,
// JPEG re-encodes, PNG, rescales, a 1% crop) are grouped with their original and with nothing
// else; 200 distinct synthetic images form no group; hostile files are fingerprinted without a
// decode; multi-index hashing finds exactly the pairs a comparison of every pair finds.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "data/hostile_images.h"
#include "ltfit/data/duplicates.h"
#include "ltfit/data/synth.h"
#include "support/test_support.h"

namespace fs = std::filesystem;

namespace {

// A "natural-ish" picture: a two-colour gradient, a few filled shapes, blur and pixel noise.
cv::Mat duplicate_test_picture(std::uint64_t seed, int width, int height) {
  cv::RNG rng(seed);
  cv::Mat image(height, width, CV_8UC3);
  const cv::Vec3d a(rng.uniform(0, 255), rng.uniform(0, 255), rng.uniform(0, 255));
  const cv::Vec3d b(rng.uniform(0, 255), rng.uniform(0, 255), rng.uniform(0, 255));
  const double angle = rng.uniform(0.0, CV_PI);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const double t =
          0.5 + 0.5 * ((x - width / 2.0) * std::cos(angle) + (y - height / 2.0) * std::sin(angle)) /
                    width;
      const cv::Vec3d c = a * (1 - t) + b * t;
      image.at<cv::Vec3b>(y, x) =
          cv::Vec3b(cv::saturate_cast<uchar>(c[0]), cv::saturate_cast<uchar>(c[1]),
                    cv::saturate_cast<uchar>(c[2]));
    }
  }
  for (int s = 0; s < 6; ++s) {
    const cv::Scalar colour(rng.uniform(0, 255), rng.uniform(0, 255), rng.uniform(0, 255));
    const cv::Point centre(rng.uniform(0, width), rng.uniform(0, height));
    const int r = rng.uniform(height / 10, height / 3);
    if (s % 2 == 0) {
      cv::circle(image, centre, r, colour, cv::FILLED, cv::LINE_AA);
    } else {
      cv::rectangle(image, centre, centre + cv::Point(r, r * 2 / 3), colour, cv::FILLED);
    }
  }
  cv::GaussianBlur(image, image, cv::Size(5, 5), 1.5);
  cv::Mat noise(image.size(), CV_8UC3);
  cv::randn(noise, cv::Scalar::all(0), cv::Scalar::all(6));
  image += noise;
  return image;
}

void write_duplicate_image(const fs::path& path, const cv::Mat& image, int jpeg_quality = 95) {
  REQUIRE(cv::imwrite(path.string(), image, {cv::IMWRITE_JPEG_QUALITY, jpeg_quality}));
}

// Writes an original and its planted copies; returns their paths (the original first).
std::vector<std::string> plant_copies(const fs::path& dir, int base) {
  const cv::Mat image = duplicate_test_picture(1000 + base, 400 + 20 * (base % 5), 300);
  const std::string stem = (dir / ("base" + std::to_string(base))).string();
  write_duplicate_image(stem + ".jpg", image, 95);
  fs::copy_file(stem + ".jpg", stem + "_copy.jpg");
  write_duplicate_image(stem + "_q60.jpg", cv::imread(stem + ".jpg"), 60);  // re-encoded 95 -> 60
  write_duplicate_image(stem + ".png", image);
  cv::Mat half, larger;
  cv::resize(image, half, {}, 0.5, 0.5, cv::INTER_AREA);
  cv::resize(image, larger, {}, 1.5, 1.5, cv::INTER_CUBIC);
  write_duplicate_image(stem + "_half.jpg", half);
  write_duplicate_image(stem + "_x1.5.png", larger);
  // 1% off every side (2% came within 8 bits, 3% within 12, 5% within 20: docs/clean.md).
  const int dx = image.cols / 100, dy = image.rows / 100;
  write_duplicate_image(stem + "_crop.jpg",
                        image(cv::Rect(dx, dy, image.cols - 2 * dx, image.rows - 2 * dy)));
  return {stem + ".jpg",      stem + "_copy.jpg", stem + "_q60.jpg", stem + ".png",
          stem + "_half.jpg", stem + "_x1.5.png", stem + "_crop.jpg"};
}

std::vector<ltfit::DuplicateGroup> brute_force_groups(const std::vector<ltfit::ImageFingerprint>& p,
                                                      int d) {
  // Components of the "within d bits or same sha256" graph, by repeated relaxation.
  std::vector<std::int64_t> label(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) label[i] = static_cast<std::int64_t>(i);
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t i = 0; i < p.size(); ++i) {
      for (std::size_t j = 0; j < p.size(); ++j) {
        const bool near =
            p[i].decoded && p[j].decoded && ltfit::phash_distance(p[i].phash, p[j].phash) <= d;
        if ((near || (!p[i].sha256.empty() && p[i].sha256 == p[j].sha256)) && label[j] < label[i]) {
          label[i] = label[j];
          changed = true;
        }
      }
    }
  }
  std::vector<ltfit::DuplicateGroup> groups;
  for (std::size_t root = 0; root < p.size(); ++root) {
    ltfit::DuplicateGroup g;
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (label[i] == static_cast<std::int64_t>(root))
        g.members.push_back(static_cast<std::int64_t>(i));
    }
    if (g.members.size() >= 2) groups.push_back(g);
  }
  return groups;
}

}  // namespace

TEST_CASE("duplicates: planted copies are grouped with their original and nothing else",
          "[duplicates]") {
  ltfit::testing::TempDir dir;
  constexpr int kBases = 12;
  std::vector<std::string> paths;
  for (int b = 0; b < kBases; ++b) {
    const auto planted = plant_copies(dir.path(), b);
    paths.insert(paths.end(), planted.begin(), planted.end());
  }
  const auto prints = ltfit::fingerprint_images(paths, 2);
  REQUIRE(prints.size() == paths.size());
  for (const auto& p : prints) REQUIRE(p.decoded);
  CHECK(prints[0].sha256 == prints[1].sha256);
  CHECK(prints[0].sha256 != prints[2].sha256);
  const std::size_t per_base = paths.size() / kBases;
  int worst_within = 0, best_across = 64;
  for (std::size_t i = 0; i < prints.size(); ++i) {
    for (std::size_t j = i + 1; j < prints.size(); ++j) {
      const int d = ltfit::phash_distance(prints[i].phash, prints[j].phash);
      if (i / per_base == j / per_base) {
        worst_within = std::max(worst_within, d);
      } else {
        best_across = std::min(best_across, d);
      }
    }
  }
  std::string by_kind;
  for (std::size_t k = 1; k < per_base; ++k) {
    int worst = 0;
    for (std::size_t b = 0; b < kBases; ++b) {
      worst = std::max(
          worst, ltfit::phash_distance(prints[b * per_base].phash, prints[b * per_base + k].phash));
    }
    by_kind += " " + fs::path(paths[k]).filename().string() + " " + std::to_string(worst);
  }
  WARN("planted copies, largest distance to the original by kind:" << by_kind);
  WARN("planted copies: largest distance to a copy "
       << worst_within << " bits, smallest between pictures " << best_across);
  const auto groups = ltfit::find_duplicates(prints, ltfit::kDefaultDuplicateDistance);
  REQUIRE(groups.size() == kBases);
  for (int b = 0; b < kBases; ++b) {
    const auto& g = groups[b];
    std::vector<std::int64_t> want(per_base);
    for (std::size_t k = 0; k < per_base; ++k)
      want[k] = static_cast<std::int64_t>(b * per_base + k);
    CHECK(g.members == want);
    CHECK_FALSE(g.exact);
    CHECK(g.max_distance <= ltfit::kDefaultDuplicateDistance);
  }
  // Only the byte copies at distance 0.
  const auto exact = ltfit::find_duplicates({prints[0], prints[1], prints[per_base]}, 0);
  REQUIRE(exact.size() == 1);
  CHECK(exact[0].exact);
  CHECK(exact[0].members == std::vector<std::int64_t>{0, 1});
}

TEST_CASE("duplicates: distinct synthetic images form no group", "[duplicates]") {
  ltfit::testing::TempDir dir;
  std::vector<std::string> paths;
  ltfit::SynthOptions synth;
  synth.out_dir = (dir.path() / "synth").string();
  synth.train = 160;
  synth.valid = 40;
  synth.min_side = 160;
  synth.max_side = 260;
  synth.seed = 5;
  ltfit::write_synthetic_dataset(synth);
  for (const auto& entry : fs::recursive_directory_iterator(synth.out_dir)) {
    if (entry.path().extension() == ".jpg") paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  REQUIRE(paths.size() == 200);
  for (int i = 0; i < 40; ++i) {
    paths.push_back((dir.path() / ("natural" + std::to_string(i) + ".jpg")).string());
    write_duplicate_image(paths.back(), duplicate_test_picture(5000 + i, 320, 240), 90);
  }
  const auto start = std::chrono::steady_clock::now();
  const auto prints = ltfit::fingerprint_images(paths);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  WARN("fingerprinted " << prints.size() << " JPEGs of 160-500 px in " << seconds << " s ("
                        << static_cast<double>(prints.size()) / seconds << " images/s)");
  std::int64_t pairs = 0, close = 0;
  int nearest = 64;
  for (std::size_t i = 0; i < prints.size(); ++i) {
    for (std::size_t j = i + 1; j < prints.size(); ++j) {
      const int d = ltfit::phash_distance(prints[i].phash, prints[j].phash);
      ++pairs;
      close += d <= ltfit::kDefaultDuplicateDistance;
      nearest = std::min(nearest, d);
    }
  }
  WARN("distinct images: " << prints.size() << " images, " << pairs << " pairs, " << close
                           << " within " << ltfit::kDefaultDuplicateDistance
                           << " bits; nearest pair " << nearest << " bits");
  CHECK(ltfit::find_duplicates(prints).empty());
}

TEST_CASE("duplicates: hostile and unreadable files are not decoded and never grouped by pHash",
          "[duplicates]") {
  ltfit::testing::TempDir dir;
  const fs::path d = dir.path();
  ltfit::testing::write_file(d / "text.jpg", "this is not an image\n");
  ltfit::testing::write_file(d / "text_copy.jpg", "this is not an image\n");
  ltfit::testing::write_file(d / "other_text.jpg", "neither is this\n");
  ltfit::testing::write_file(d / "empty.jpg", "");
  ltfit::testing::write_file(d / "bomb.jpg", ltfit::testing::progressive_jpeg(40000, 40000));
  ltfit::testing::write_file(d / "png_bomb.png", ltfit::testing::png_claiming(100000, 100000));
  write_duplicate_image(d / "good.jpg", duplicate_test_picture(1, 200, 150));
  const std::string good = ltfit::testing::read_file(d / "good.jpg");
  ltfit::testing::write_file(d / "cut.jpg", good.substr(0, good.size() / 2));
  REQUIRE(::mkfifo((d / "fifo.jpg").c_str(), 0600) == 0);
  fs::create_directory(d / "folder.jpg");
  std::vector<std::string> paths;
  for (const char* name : {"text.jpg", "text_copy.jpg", "other_text.jpg", "empty.jpg", "bomb.jpg",
                           "png_bomb.png", "cut.jpg", "fifo.jpg", "folder.jpg", "missing.jpg"}) {
    paths.push_back((d / name).string());
  }
  const auto run = ltfit::testing::run_capped(
      [&] {
        std::string decoded;
        for (const auto& p : ltfit::fingerprint_images(paths, 3)) {
          if (p.decoded) decoded += p.path + " decoded\n";
        }
        return decoded.empty() ? std::string("none decoded") : decoded;
      },
      512ULL << 20);
  INFO(run.output);
  REQUIRE(run.exited);
  CHECK(run.output == "none decoded");
  const auto prints = ltfit::fingerprint_images(paths, 3);
  for (const auto& p : prints) {
    INFO(p.path << ": " << p.error);
    CHECK_FALSE(p.decoded);
    CHECK_FALSE(p.error.empty());
  }
  CHECK(prints[7].sha256.empty());  // the FIFO is never opened
  CHECK(prints[9].sha256.empty());
  const auto groups = ltfit::find_duplicates(prints, 64);  // every decoded pair would join
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].members == std::vector<std::int64_t>{0, 1});
  CHECK(groups[0].exact);
}

TEST_CASE("duplicates: multi-index hashing finds the pairs that comparing every pair finds",
          "[duplicates]") {
  std::mt19937_64 rng(3);
  std::vector<ltfit::ImageFingerprint> prints;
  for (int i = 0; i < 600; ++i) {
    ltfit::ImageFingerprint p;
    p.decoded = true;
    p.sha256 = std::to_string(i);
    // Every third hash a mutation of an earlier one (1-12 flipped bits): chains and near misses.
    p.phash = rng();
    if (i % 3 == 2) {
      p.phash = prints[rng() % prints.size()].phash;
      for (int f = static_cast<int>(rng() % 12) + 1; f > 0; --f) p.phash ^= 1ULL << (rng() % 64);
    }
    prints.push_back(p);
  }
  prints[10].sha256 = prints[20].sha256;  // an exact pair whose pHashes differ
  for (const int d : {0, 1, 3, 4, 7, 8, 10, 12, 15, 16, 20}) {
    INFO("distance " << d);
    const auto got = ltfit::find_duplicates(prints, d);
    const auto want = brute_force_groups(prints, d);
    REQUIRE(got.size() == want.size());
    for (std::size_t g = 0; g < got.size(); ++g) CHECK(got[g].members == want[g].members);
  }
  CHECK_THROWS_AS(ltfit::find_duplicates(prints, 65), std::invalid_argument);
  CHECK_THROWS_AS(ltfit::find_duplicates(prints, -1), std::invalid_argument);
}

TEST_CASE("duplicates: grouping speed on 50,000 random hashes", "[duplicates]") {
  std::mt19937_64 rng(11);
  std::vector<ltfit::ImageFingerprint> prints(50000);
  for (auto& p : prints) {
    p.decoded = true;
    p.phash = rng();
  }
  prints[49999].phash = prints[123].phash ^ 0x101;  // one planted near pair
  const auto start = std::chrono::steady_clock::now();
  const auto groups = ltfit::find_duplicates(prints, ltfit::kDefaultDuplicateDistance);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  WARN("grouped 50000 hashes at distance 8 in " << seconds << " s ("
                                                << 50000 / std::max(seconds, 1e-9) << " images/s)");
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].members == std::vector<std::int64_t>{123, 49999});
  CHECK(groups[0].max_distance == 2);
}

TEST_CASE("duplicates: the pHash keeps a picture's structure, not its scale", "[duplicates]") {
  const cv::Mat picture = duplicate_test_picture(42, 256, 192);
  cv::Mat gray, smaller;
  cv::cvtColor(picture, gray, cv::COLOR_BGR2GRAY);
  cv::resize(gray, smaller, {}, 0.5, 0.5, cv::INTER_AREA);
  const std::uint64_t a = ltfit::phash_of_gray(gray.data, gray.rows, gray.cols);
  const std::uint64_t b = ltfit::phash_of_gray(smaller.data, smaller.rows, smaller.cols);
  CHECK(ltfit::phash_distance(a, b) <= 4);
  // 32 of the 64 coefficients are above their median (no two equal in a natural picture).
  CHECK(std::popcount(a) == 32);
  // The negative flips every AC coefficient's sign: far away.
  cv::Mat negative = 255 - gray;
  CHECK(ltfit::phash_distance(
            a, ltfit::phash_of_gray(negative.data, negative.rows, negative.cols)) >= 48);
}

// Run by tests/data/phash_oracle.sh: hashes every file of $LTFIT_PHASH_ORACLE_DIR/files.txt and
// writes "file hex" lines to ltfit.txt for tests/data/phash_oracle.py to compare with
// imagehash.phash.
TEST_CASE("duplicates: pHashes for imagehash to check", "[.phash_oracle]") {
  const char* dir = std::getenv("LTFIT_PHASH_ORACLE_DIR");
  if (dir == nullptr) FAIL("LTFIT_PHASH_ORACLE_DIR is not set: run tests/data/phash_oracle.sh");
  const fs::path base(dir);
  std::istringstream names(ltfit::testing::read_file(base / "files.txt"));
  std::string out;
  for (std::string name; names >> name;) {
    const ltfit::ImageFingerprint p = ltfit::fingerprint_image((base / name).string());
    INFO(name << ": " << p.error);
    REQUIRE(p.decoded);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(p.phash));
    out += name + " " + hex + "\n";
  }
  ltfit::testing::write_file(base / "ltfit.txt", out);
}
