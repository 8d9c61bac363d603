// RandAugment and TrivialAugmentWide (data/auto_augment.h): each op's pixels, the draws, and the
// loader's use of them. The "[parity]" case (run by scripts/run_parity.sh, skipped visibly
// without torchvision) gives torchvision's own _apply_op, RandAugment and TrivialAugmentWide the
// same images, ops and seeds, and compares every pixel.
#include "ltfit/data/auto_augment.h"

#include <catch2/catch.hpp>

#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

#include "ltfit/data/loader.h"
#include "model/archive_builders.h"
#include "support/test_support.h"

namespace auto_augment_test {

using ltfit::AugmentOp;
using ltfit::AugmentOpDraw;
using ltfit::AugmentPolicy;

torch::Tensor random_image(std::int64_t channels, std::int64_t h, std::int64_t w,
                           std::uint64_t seed) {
  at::Generator g = at::make_generator<at::CPUGeneratorImpl>(seed);
  return torch::randint(0, 256, {channels, h, w}, g, torch::kLong).to(torch::kUInt8);
}

std::vector<int> pixel_values(const torch::Tensor& t) {
  const torch::Tensor flat = t.contiguous().view({-1}).to(torch::kInt32);
  return {flat.data_ptr<int>(), flat.data_ptr<int>() + flat.numel()};
}

torch::Tensor apply(const torch::Tensor& image, AugmentOp op, double magnitude) {
  return ltfit::apply_augment_op(image, AugmentOpDraw{op, magnitude});
}

TEST_CASE("augment magnitudes are torchvision's float32 tables", "[augment]") {
  using ltfit::augment_magnitude;
  const auto ra = AugmentPolicy::kRandAugment, ta = AugmentPolicy::kTrivialAugment;
  CHECK(augment_magnitude(ra, AugmentOp::kShearX, 9, 32, 32) == static_cast<double>(0.09f));
  CHECK(augment_magnitude(ra, AugmentOp::kShearX, 30, 32, 32) == static_cast<double>(0.3f));
  CHECK(augment_magnitude(ta, AugmentOp::kShearY, 30, 32, 32) == static_cast<double>(0.99f));
  CHECK(augment_magnitude(ra, AugmentOp::kRotate, 30, 32, 32) == 30.0);
  CHECK(augment_magnitude(ta, AugmentOp::kRotate, 30, 32, 32) == 135.0);
  // RandAugment translates by up to 150/331 of the side: x by the width, y by the height.
  CHECK(augment_magnitude(ra, AugmentOp::kTranslateX, 30, 100, 331) == Approx(150.0));
  CHECK(augment_magnitude(ra, AugmentOp::kTranslateY, 30, 100, 331) == Approx(150.0 * 100 / 331));
  CHECK(augment_magnitude(ta, AugmentOp::kTranslateX, 30, 100, 331) == 32.0);
  // Posterize keeps 8 bits at bin 0 down to 4 (RandAugment) or 2 (TrivialAugmentWide) at 30.
  CHECK(augment_magnitude(ra, AugmentOp::kPosterize, 0, 8, 8) == 8.0);
  CHECK(augment_magnitude(ra, AugmentOp::kPosterize, 30, 8, 8) == 4.0);
  CHECK(augment_magnitude(ta, AugmentOp::kPosterize, 30, 8, 8) == 2.0);
  CHECK(augment_magnitude(ra, AugmentOp::kSolarize, 0, 8, 8) == 255.0);
  CHECK(augment_magnitude(ra, AugmentOp::kSolarize, 30, 8, 8) == 0.0);
  CHECK(augment_magnitude(ra, AugmentOp::kEqualize, 12, 8, 8) == 0.0);
  CHECK_THROWS_AS(augment_magnitude(ra, AugmentOp::kRotate, 31, 8, 8), std::invalid_argument);
  CHECK_THROWS_AS(augment_magnitude(ra, AugmentOp::kRotate, -1, 8, 8), std::invalid_argument);
}

TEST_CASE("augment ops: each does what its name says on known pixels", "[augment]") {
  const torch::Tensor image = random_image(3, 12, 16, 5);
  CHECK(torch::equal(apply(image, AugmentOp::kIdentity, 0), image));
  CHECK(torch::equal(apply(image, AugmentOp::kRotate, 0), image));
  CHECK(torch::equal(apply(image, AugmentOp::kBrightness, 0), image));
  // Translate by +5 columns: the image moves right, the uncovered columns are black.
  using torch::indexing::Slice;
  const torch::Tensor moved = apply(image, AugmentOp::kTranslateX, 5.7);  // int(5.7) = 5
  CHECK(torch::equal(moved.index({Slice(), Slice(), Slice(5, 16)}),
                     image.index({Slice(), Slice(), Slice(0, 11)})));
  CHECK(moved.index({Slice(), Slice(), Slice(0, 5)}).sum().item<std::int64_t>() == 0);
  const torch::Tensor up = apply(image, AugmentOp::kTranslateY, -3.2);  // int(-3.2) = -3
  CHECK(torch::equal(up.index({Slice(), Slice(0, 9)}), image.index({Slice(), Slice(3, 12)})));
  // Posterize 4 bits clears the low four; Solarize at 128 inverts what is >= 128.
  CHECK(torch::equal(apply(image, AugmentOp::kPosterize, 4), image.bitwise_and(0xF0)));
  CHECK(torch::equal(apply(image, AugmentOp::kSolarize, 128),
                     torch::where(image >= 128, 255 - image, image)));
  // Brightness 1 - 1 = 0 is black; AutoContrast stretches each channel to 0..255.
  CHECK(apply(image, AugmentOp::kBrightness, -1.0).sum().item<std::int64_t>() == 0);
  const torch::Tensor dim = (image / 4 + 40).to(torch::kUInt8);
  const torch::Tensor stretched = apply(dim, AugmentOp::kAutoContrast, 0);
  CHECK(torch::equal(stretched.amin({1, 2}), torch::zeros({3}, torch::kUInt8)));
  CHECK(torch::equal(stretched.amax({1, 2}), torch::full({3}, 255, torch::kUInt8)));
  // A flat image: AutoContrast and Equalize leave it, Color -1 (grey) keeps grey pixels grey.
  const torch::Tensor flat = torch::full({3, 6, 6}, 77, torch::kUInt8);
  CHECK(torch::equal(apply(flat, AugmentOp::kAutoContrast, 0), flat));
  CHECK(torch::equal(apply(flat, AugmentOp::kEqualize, 0), flat));
  const torch::Tensor grey = apply(image, AugmentOp::kColor, -1.0);
  CHECK(torch::equal(grey[0], grey[1]));
  CHECK(torch::equal(grey[1], grey[2]));
  // Sharpness keeps the border rows and columns at factor 0 (the smoothed image's border).
  const torch::Tensor soft = apply(image, AugmentOp::kSharpness, -1.0);
  CHECK(torch::equal(soft.index({Slice(), 0}), image.index({Slice(), 0})));
  CHECK_FALSE(torch::equal(soft, image));
  // One channel works; a float or [H,W,C]-shaped 4-channel image is refused.
  const torch::Tensor mono = random_image(1, 9, 9, 6);
  CHECK(torch::equal(apply(mono, AugmentOp::kColor, 0.5), mono));
  CHECK(apply(mono, AugmentOp::kEqualize, 0).sizes() == mono.sizes());
  CHECK_THROWS_AS(apply(image.to(torch::kFloat32), AugmentOp::kIdentity, 0), std::invalid_argument);
  CHECK_THROWS_AS(apply(random_image(4, 5, 5, 1), AugmentOp::kIdentity, 0), std::invalid_argument);
}

TEST_CASE("augment policies: draws per policy, the same seed the same image", "[augment]") {
  ltfit::RandAugmentConfig config;
  config.num_ops = 3;
  config.magnitude = 12;
  std::set<AugmentOp> seen;
  for (std::uint64_t seed = 0; seed < 60; ++seed) {
    at::Generator g = at::make_generator<at::CPUGeneratorImpl>(seed);
    const auto ra = ltfit::draw_augment_policy(AugmentPolicy::kRandAugment, config, 20, 30, g);
    REQUIRE(ra.size() == 3);
    for (const AugmentOpDraw& d : ra) {
      seen.insert(d.op);
      CHECK(std::abs(d.magnitude) ==
            ltfit::augment_magnitude(AugmentPolicy::kRandAugment, d.op, 12, 20, 30));
    }
    CHECK(ltfit::draw_augment_policy(AugmentPolicy::kTrivialAugment, config, 20, 30, g).size() ==
          1);
    CHECK(ltfit::draw_augment_policy(AugmentPolicy::kNone, config, 20, 30, g).empty());
  }
  CHECK(seen.size() == ltfit::kAugmentOpCount);  // 180 draws reach all 14 ops
  const torch::Tensor hwc = random_image(3, 20, 30, 8).permute({1, 2, 0}).contiguous();
  const auto policy = AugmentPolicy::kTrivialAugment;
  const torch::Tensor a = ltfit::apply_augment_policy(hwc, policy, config, 11);
  CHECK(a.sizes() == hwc.sizes());
  CHECK(a.is_contiguous());
  CHECK(torch::equal(a, ltfit::apply_augment_policy(hwc, policy, config, 11)));
  int differ = 0;
  for (std::uint64_t seed = 12; seed < 20; ++seed) {
    differ += !torch::equal(a, ltfit::apply_augment_policy(hwc, policy, config, seed));
  }
  CHECK(differ >= 5);
  CHECK(torch::equal(ltfit::apply_augment_policy(hwc, AugmentPolicy::kNone, config, 11), hwc));
}

TEST_CASE("data.augment.policy: training batches get it, reproducibly - validation never",
          "[augment][loader]") {
  ltfit::testing::TempDir dir;
  const auto samples = ltfit::testing::write_small_synth(dir.path(), 8, 2, 40, 48, /*seed=*/4);
  ltfit::LoaderOptions options;
  options.data.image_size = 32;
  options.data.batch_size = 4;
  options.train = true;
  options.data.workers = 2;
  options.seed = 3;
  auto first_batch = [&](const ltfit::LoaderOptions& o) {
    ltfit::Loader loader(samples, o);
    loader.start_epoch(0);
    return loader.next()->images;
  };
  const torch::Tensor plain = first_batch(options);
  options.data.augment.policy = AugmentPolicy::kRandAugment;
  options.data.augment.rand_augment.magnitude = 20;
  const torch::Tensor augmented = first_batch(options);
  CHECK_FALSE(torch::equal(plain, augmented));
  CHECK(torch::equal(augmented, first_batch(options)));
  options.data.workers = 1;  // any thread gives the same pixels
  CHECK(torch::equal(augmented, first_batch(options)));
  options.train = false;
  const torch::Tensor valid = first_batch(options);
  options.data.augment.policy = AugmentPolicy::kNone;
  CHECK(torch::equal(valid, first_batch(options)));
}

TEST_CASE("torchvision's own _apply_op, RandAugment and TrivialAugmentWide give the same pixels",
          "[parity]") {
  nlohmann::json cases = nlohmann::json::array();
  const std::vector<std::int64_t> shape = {3, 37, 45};
  const torch::Tensor image = random_image(3, 37, 45, 21);
  // Every op at bins 0, 9 and 30 of both policies' tables, both signs where signed.
  for (int op = 0; op < ltfit::kAugmentOpCount; ++op) {
    for (const auto policy : {AugmentPolicy::kRandAugment, AugmentPolicy::kTrivialAugment}) {
      for (const int bin : {0, 9, 30}) {
        for (const double sign : {1.0, -1.0}) {
          const auto kind = static_cast<AugmentOp>(op);
          if (sign < 0 && !ltfit::augment_op_signed(kind)) continue;
          const double m = sign * ltfit::augment_magnitude(policy, kind, bin, 37, 45);
          const torch::Tensor ours = apply(image, kind, m);
          cases.push_back({{"op", ltfit::augment_op_name(kind)},
                           {"magnitude", m},
                           {"shape", shape},
                           {"image", pixel_values(image)},
                           {"expected", pixel_values(ours)}});
        }
      }
    }
  }
  // A one-channel image and a full-size one (contrast's mean over 50,176 pixels).
  const torch::Tensor mono = random_image(1, 23, 19, 22);
  const torch::Tensor big = random_image(3, 224, 224, 23);
  for (const auto& [name, m] :
       std::vector<std::pair<AugmentOp, double>>{{AugmentOp::kContrast, 0.6},
                                                 {AugmentOp::kSharpness, -0.5},
                                                 {AugmentOp::kRotate, 17.0},
                                                 {AugmentOp::kEqualize, 0},
                                                 {AugmentOp::kShearY, -0.2}}) {
    for (const torch::Tensor& img : {mono, big}) {
      cases.push_back({{"op", ltfit::augment_op_name(name)},
                       {"magnitude", m},
                       {"shape", img.sizes().vec()},
                       {"image", pixel_values(img)},
                       {"expected", pixel_values(apply(img, name, m))}});
    }
  }
  // Whole policies: RandAugment at two settings and TrivialAugmentWide, each seeded.
  const torch::Tensor hwc = image.permute({1, 2, 0}).contiguous();
  for (std::uint64_t k = 0; k < 24; ++k) {
    ltfit::RandAugmentConfig config;
    config.num_ops = k % 3 == 0 ? 3 : 2;
    config.magnitude = k % 2 == 0 ? 9 : 25;
    const auto policy = k < 12 ? AugmentPolicy::kRandAugment : AugmentPolicy::kTrivialAugment;
    const std::uint64_t seed = ltfit::policy_seed(ltfit::sample_seed(7, 1, k));
    const torch::Tensor ours = ltfit::apply_augment_policy(hwc, policy, config, seed);
    cases.push_back({{"policy", ltfit::augment_policy_name(policy)},
                     {"num_ops", config.num_ops},
                     {"magnitude_bin", config.magnitude},
                     {"seed", seed},
                     {"shape", shape},
                     {"image", pixel_values(image)},
                     {"expected", pixel_values(ours.permute({2, 0, 1}))}});
  }
  const auto [status, output] =
      ltfit::testing::run_python_oracle("tests/data/auto_augment_oracle.py", cases.dump());
  INFO(output);
  CHECK(status == 0);
}

}  // namespace auto_augment_test
