// Random erasing (train/random_erasing.h): torchvision's RandomErasing, draw for draw. The
// "[parity]" case (run by scripts/run_parity.sh, skipped visibly without torchvision) gives
// torchvision the same seed and image and compares.
#include "ltfit/train/random_erasing.h"

#include <catch2/catch.hpp>

#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "model/archive_builders.h"
#include "support/test_support.h"

namespace {

ltfit::RandomErasingConfig erasing(double p, bool random_value = true, double value = 0.0) {
  ltfit::RandomErasingConfig c;
  c.p = p;
  c.random_value = random_value;
  c.value = value;
  return c;
}

at::Generator generator(std::uint64_t seed) {
  return at::make_generator<at::CPUGeneratorImpl>(seed);
}

std::vector<float> values(const torch::Tensor& t) {
  const torch::Tensor flat = t.contiguous().view({-1});
  return {flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel()};
}

}  // namespace

TEST_CASE("random erasing fills one box of the drawn size, or leaves the image", "[augment]") {
  torch::manual_seed(1);
  const torch::Tensor original = torch::rand({3, 20, 30});
  int erased = 0;
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    torch::Tensor image = original.clone();
    at::Generator g = generator(seed);
    const ltfit::ErasedBox box = ltfit::random_erase(image, erasing(0.5, false, -3.0), g);
    const torch::Tensor changed = (image != original).any(0);
    if (!box.erased) {
      CHECK(changed.sum().item<std::int64_t>() == 0);
      continue;
    }
    ++erased;
    const double area = static_cast<double>(box.h * box.w) / (20.0 * 30.0);
    CHECK(area <= 0.34);
    CHECK(box.i + box.h <= 20);
    CHECK(box.j + box.w <= 30);
    using torch::indexing::Slice;
    const torch::Tensor inside =
        image.index({Slice(), Slice(box.i, box.i + box.h), Slice(box.j, box.j + box.w)});
    CHECK(torch::all(inside == -3.0).item<bool>());
    CHECK(changed.sum().item<std::int64_t>() == box.h * box.w);
  }
  CHECK(erased > 10);  // p 0.5 over 40 images
  CHECK(erased < 30);
  // p 0: never; the same seed: the same box.
  torch::Tensor image = original.clone();
  at::Generator g = generator(3);
  CHECK_FALSE(ltfit::random_erase(image, erasing(0.0), g).erased);
  CHECK(torch::equal(image, original));
  torch::Tensor a = original.clone(), b = original.clone();
  at::Generator ga = generator(9), gb = generator(9);
  ltfit::random_erase(a, erasing(1.0), ga);
  ltfit::random_erase(b, erasing(1.0), gb);
  CHECK(torch::equal(a, b));
  CHECK_FALSE(torch::equal(a, original));
}

TEST_CASE("torchvision's own RandomErasing, given ltfit's seed, erases the same pixels",
          "[parity]") {
  nlohmann::json cases = nlohmann::json::array();
  torch::manual_seed(2);
  for (int k = 0; k < 24; ++k) {
    const bool random_value = k % 3 != 0;
    const std::vector<std::int64_t> shape = {3, 16 + k % 5, 24 - k % 7};
    const torch::Tensor image = torch::randn(shape);
    const std::uint64_t seed =
        ltfit::RandomErasingHook::image_seed(42, k / 4, static_cast<std::uint64_t>(k % 2), k);
    ltfit::RandomErasingConfig config = erasing(k % 4 == 3 ? 0.5 : 1.0, random_value, 0.25);
    if (k % 5 == 4) config.ratio = {0.1, 10.0};
    torch::Tensor erased = image.clone();
    at::Generator g = generator(seed);
    ltfit::random_erase(erased, config, g);
    cases.push_back({{"name", "case " + std::to_string(k)},
                     {"shape", shape},
                     {"image", values(image)},
                     {"p", config.p},
                     {"scale", config.scale},
                     {"ratio", config.ratio},
                     {"value", random_value ? nlohmann::json(nullptr) : nlohmann::json(0.25)},
                     {"seed", seed},
                     {"erased", values(erased)}});
  }
  const auto [status, output] =
      ltfit::testing::run_python_oracle("tests/train/random_erasing_oracle.py", cases.dump());
  INFO(output);
  CHECK(status == 0);
}
