// Portable random numbers: the out-of-line parts (see ltfit/util/random.h).
#include "ltfit/util/random.h"

#include <cstddef>
#include <utility>

namespace ltfit {

std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b) {
  return splitmix64_mix(a + kGoldenGamma * (b + 1));
}

std::vector<std::int64_t> epoch_permutation(std::int64_t n, std::uint64_t seed, int epoch) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  MixChain rng(mix_seed(seed, 0x5EED0000ULL + static_cast<std::uint64_t>(epoch)));
  for (std::int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates
    const auto j = static_cast<std::int64_t>(rng.uniform() * static_cast<double>(i + 1));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  return order;
}

}  // namespace ltfit
