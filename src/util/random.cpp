// Portable random numbers: the out-of-line parts (see ltfit/util/random.h).
#include "ltfit/util/random.h"

#include <cmath>
#include <cstddef>
#include <utility>

namespace ltfit {

std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b) {
  return splitmix64_mix(a + kGoldenGamma * (b + 1));
}

double standard_normal(SplitMix64& rng) {
  const double u1 = 1.0 - rng.uniform();  // (0, 1]: log(u1) is finite
  const double u2 = rng.uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

double gamma_draw(SplitMix64& rng, double shape) {
  if (shape < 1.0) {
    const double u = 1.0 - rng.uniform();
    return gamma_draw(rng, shape + 1.0) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x = 0.0, v = 0.0;
    do {
      x = standard_normal(rng);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = 1.0 - rng.uniform();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

double beta_draw(SplitMix64& rng, double a, double b) {
  const double x = gamma_draw(rng, a);
  const double y = gamma_draw(rng, b);
  if (x + y > 0.0) return x / (x + y);
  return rng.uniform() < a / (a + b) ? 1.0 : 0.0;
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
