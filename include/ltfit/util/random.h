// Portable pseudo-random numbers: SplitMix64 and the few helpers ltfit builds on it.
//
// Every random choice in ltfit (synthetic images, the Kaggle validation split, the loader's
// epoch order and crops) draws from here. Why our own generator: std::*_distribution and
// std::shuffle are specified by their results' distribution, not their values, so libstdc++,
// libc++ and MSVC give different numbers for the same engine and seed. With these functions the
// same seed gives the same files, split and batches on every platform. The sequences are part of
// the reproducibility contract: changing a formula here changes every seeded output, and
// tests/util/random_test.cpp pins values so that such a change is caught.
//
// Thread-safety: the free functions are pure. A SplitMix64 or MixChain is a small value with
// mutable state; give each thread its own, seeded with mix_seed from what makes its work unique.
#pragma once

#include <cstdint>
#include <vector>

namespace ltfit {

// SplitMix64's increment (2^64 / golden ratio, odd).
inline constexpr std::uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ULL;

// SplitMix64's output function: a bijective 64-bit mix (Stafford's "Mix13" variant).
constexpr std::uint64_t splitmix64_mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// The top 53 bits of `bits` as a double in [0,1), every value equally likely.
constexpr double unit_interval(std::uint64_t bits) {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

// Stable 64-bit mixing of two values (splitmix64 of a + gamma * (b + 1)), used to derive
// independent seeds, e.g. per (seed, epoch, sample). mix_seed(s, 0) == SplitMix64(s).next().
std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b);

// SplitMix64 (Steele, Lea, Flood 2014): a 64-bit state advanced by kGoldenGamma, each output the
// mixed state. Fast, tiny and good enough for data generation and shuffling (not cryptography).
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() { return splitmix64_mix(state_ += kGoldenGamma); }
  // [0,1)
  double uniform() { return unit_interval(next()); }
  // [lo,hi)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // [lo,hi], by modulo: the bias (range / 2^64) is negligible for the small ranges we draw.
  int uniform_int(int lo, int hi) {
    return lo + static_cast<int>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  // [0,n) for n > 0, by modulo (same bias note as uniform_int).
  std::uint64_t below(std::uint64_t n) { return next() % n; }
  // true with probability p.
  bool bernoulli(double p) { return uniform() < p; }

 private:
  std::uint64_t state_;
};

// A stream of uniforms where each state is the previous one passed through
// mix_seed(state, kGoldenGamma). Not SplitMix64's recurrence, but as well mixed for the few
// draws made per seed; kept because the loader's epoch order and crops are defined by it.
class MixChain {
 public:
  explicit MixChain(std::uint64_t seed) : state_(seed) {}

  // [0,1)
  double uniform() {
    state_ = mix_seed(state_, kGoldenGamma);
    return unit_interval(state_);
  }

 private:
  std::uint64_t state_;
};

// A standard normal draw (Box-Muller on two uniforms; the second value is not kept).
double standard_normal(SplitMix64& rng);
// Gamma(shape, 1) for shape > 0 (Marsaglia and Tsang 2000; shape < 1 through
// Gamma(shape + 1) · U^(1/shape)).
double gamma_draw(SplitMix64& rng, double shape);
// Beta(a, b) for a, b > 0, as X / (X + Y) of two gamma draws (numpy's method for a, b > 1; a
// Bernoulli(a / (a + b)) draw when both underflow to 0, as they may for tiny shapes).
double beta_draw(SplitMix64& rng, double a, double b);

// Deterministic permutation of 0..n-1 for (seed, epoch), identical on every platform:
// Fisher-Yates driven by MixChain(mix_seed(seed, 0x5EED0000 + epoch)).
std::vector<std::int64_t> epoch_permutation(std::int64_t n, std::uint64_t seed, int epoch);

}  // namespace ltfit
