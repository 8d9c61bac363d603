// Tests of the portable generators: determinism per seed, ranges, permutations, and pinned values
// (reference SplitMix64 outputs and the sequences ltfit's seeded outputs were built on) so that a
// change to any formula, which would change every synthetic set, split and batch order, fails here.
#include "ltfit/util/random.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

using ltfit::epoch_permutation;
using ltfit::mix_seed;
using ltfit::MixChain;
using ltfit::SplitMix64;

namespace {

std::vector<std::uint64_t> draws(std::uint64_t seed, int count) {
  SplitMix64 rng(seed);
  std::vector<std::uint64_t> out;
  for (int i = 0; i < count; ++i) out.push_back(rng.next());
  return out;
}

std::vector<double> chain_draws(std::uint64_t seed, int count) {
  MixChain rng(seed);
  std::vector<double> out;
  for (int i = 0; i < count; ++i) out.push_back(rng.uniform());
  return out;
}

}  // namespace

TEST_CASE("SplitMix64: same seed gives the same sequence, another seed another", "[util]") {
  CHECK(draws(123, 100) == draws(123, 100));
  CHECK(draws(123, 100) != draws(124, 100));
  CHECK(chain_draws(123, 100) == chain_draws(123, 100));
  CHECK(chain_draws(123, 100) != chain_draws(124, 100));
}

TEST_CASE("SplitMix64: uniform draws stay in their ranges", "[util]") {
  SplitMix64 rng(5);
  MixChain chain(5);
  double sum = 0.0;
  for (int i = 0; i < 10000; ++i) {
    const double u = rng.uniform();
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    sum += u;
    const double c = chain.uniform();
    REQUIRE(c >= 0.0);
    REQUIRE(c < 1.0);
    const double x = rng.uniform(-2.5, 4.0);
    REQUIRE(x >= -2.5);
    REQUIRE(x < 4.0);
    const int k = rng.uniform_int(3, 7);
    REQUIRE(k >= 3);
    REQUIRE(k <= 7);
    REQUIRE(rng.below(11) < 11);
  }
  CHECK(sum / 10000 == Approx(0.5).margin(0.02));
  CHECK(ltfit::unit_interval(~std::uint64_t{0}) < 1.0);
  CHECK(ltfit::unit_interval(0) == 0.0);
}

TEST_CASE("SplitMix64: bernoulli follows its probability", "[util]") {
  SplitMix64 rng(9);
  int hits = 0;
  for (int i = 0; i < 10000; ++i) hits += rng.bernoulli(0.25) ? 1 : 0;
  CHECK(hits == Approx(2500).margin(200));
  CHECK_FALSE(SplitMix64(1).bernoulli(0.0));
  CHECK(SplitMix64(1).bernoulli(1.0));
}

TEST_CASE("epoch_permutation: a permutation, fixed per (seed, epoch)", "[util]") {
  for (const std::int64_t n : {0, 1, 2, 7, 100}) {
    auto order = epoch_permutation(n, 42, 3);
    REQUIRE(static_cast<std::int64_t>(order.size()) == n);
    std::sort(order.begin(), order.end());
    for (std::int64_t i = 0; i < n; ++i) CHECK(order[static_cast<size_t>(i)] == i);
  }
  CHECK(epoch_permutation(100, 42, 3) == epoch_permutation(100, 42, 3));
  CHECK(epoch_permutation(100, 42, 3) != epoch_permutation(100, 42, 4));
  CHECK(epoch_permutation(100, 42, 3) != epoch_permutation(100, 43, 3));
}

TEST_CASE("pinned values: SplitMix64 reference outputs", "[util]") {
  // Seed 0: the published SplitMix64 reference sequence.
  CHECK(draws(0, 3) == std::vector<std::uint64_t>{0xE220A8397B1DCDAFULL, 0x6E789E6AA1B965F4ULL,
                                                  0x06C45D188009454FULL});
  CHECK(draws(42, 3) == std::vector<std::uint64_t>{0xBDD732262FEB6E95ULL, 0x28EFE333B266F103ULL,
                                                   0x47526757130F9F52ULL});
  SplitMix64 uniforms(42);
  CHECK(uniforms.uniform() == 0.74156487877182331);
  CHECK(uniforms.uniform() == 0.1599103928769201);
  SplitMix64 ints(7);
  std::vector<int> drawn;
  for (int i = 0; i < 5; ++i) drawn.push_back(ints.uniform_int(0, 9));
  CHECK(drawn == std::vector<int>{7, 4, 6, 3, 4});
}

TEST_CASE("pinned values: mix_seed, MixChain and epoch_permutation", "[util]") {
  CHECK(mix_seed(0, 0) == 16294208416658607535ULL);
  CHECK(mix_seed(0, 0) == SplitMix64(0).next());
  CHECK(mix_seed(0, 7) == 14232521865600346940ULL);
  CHECK(mix_seed(42, 1) == 0x28EFE333B266F103ULL);
  CHECK(chain_draws(42, 3) ==
        std::vector<double>{0.32632106990180798, 0.27039034714105936, 0.88055065146892286});
  CHECK(epoch_permutation(10, 0, 0) == std::vector<std::int64_t>{9, 4, 3, 6, 8, 0, 1, 5, 2, 7});
  CHECK(epoch_permutation(10, 42, 1) == std::vector<std::int64_t>{6, 9, 5, 0, 2, 4, 7, 1, 3, 8});
}
