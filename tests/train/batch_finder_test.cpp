// Batch-size search: the pure doubling + bisection on fabricated limits, and real CPU trials.
#include <catch2/catch.hpp>

#include <cmath>

#include "ltfit/config/config.h"
#include "ltfit/train/batch_finder.h"
#include "ltfit/util/error.h"

namespace {

// A predicate that fits up to `limit` and counts its calls.
struct Limit {
  int limit = 0;
  int calls = 0;
  bool operator()(int batch) {
    ++calls;
    return batch <= limit;
  }
};

ltfit::BatchSearch search(Limit& limit, int start, int max) {
  return ltfit::find_largest_batch([&](int b) { return limit(b); }, start, max);
}

ltfit::Config tiny_config(int image_size) {
  ltfit::Config config;
  config.model.arch = "resnet18";
  config.model.pretrained = {};  // must be ignored: trials never load weights
  config.data.image_size = image_size;
  config.train.device = ltfit::parse_train_device("cpu");
  return config;
}

}  // namespace

TEST_CASE("find_largest_batch finds the limit in logarithmically many trials", "[batch_finder]") {
  Limit limit{37};
  const ltfit::BatchSearch s = search(limit, 1, 1024);
  CHECK(s.largest == 37);
  CHECK(limit.calls == static_cast<int>(s.trials.size()));
  // 1..64 doubling (7 trials), then bisection of (32, 64): at most log2(32) = 5 more.
  CHECK(s.trials.size() <= 12);
  CHECK(s.trials.front().batch == 1);
  for (const auto& t : s.trials) {
    CHECK(t.fits == (t.batch <= 37));
    CHECK(t.seconds >= 0.0);
  }
  bool tried_37 = false, tried_38 = false;
  for (const auto& t : s.trials) tried_37 |= t.batch == 37, tried_38 |= t.batch == 38;
  CHECK(tried_37);
  CHECK(tried_38);  // the answer is bracketed by a success and a failure one apart
}

TEST_CASE("find_largest_batch stops at max, returns 0 when start fails", "[batch_finder]") {
  Limit big{5000};
  const ltfit::BatchSearch at_max = search(big, 1, 256);
  CHECK(at_max.largest == 256);
  CHECK(at_max.trials.size() == 9);  // 1, 2, ..., 256
  CHECK(at_max.trials.back().batch == 256);

  Limit odd_max{5000};
  CHECK(search(odd_max, 3, 100).largest == 100);  // 3, 6, ..., 96, then 100 itself

  Limit exact{256};
  CHECK(search(exact, 1, 256).largest == 256);

  Limit tiny{3};
  const ltfit::BatchSearch none = search(tiny, 4, 64);
  CHECK(none.largest == 0);
  CHECK(none.trials.size() == 1);
  CHECK_FALSE(none.trials[0].fits);

  Limit from_start{16};
  CHECK(search(from_start, 16, 16).largest == 16);
  CHECK_THROWS_AS(search(from_start, 0, 16), ltfit::ConfigError);
  CHECK_THROWS_AS(search(from_start, 32, 16), ltfit::ConfigError);
}

TEST_CASE("find_largest_batch bisects correctly for every limit up to 130", "[batch_finder]") {
  for (int l = 1; l <= 130; ++l) {
    Limit limit{l};
    const ltfit::BatchSearch s = search(limit, 1, 128);
    INFO("limit " << l);
    CHECK(s.largest == std::min(l, 128));
    CHECK(s.trials.size() <= 2 * 8 + 1);
  }
}

TEST_CASE("a batch trial trains resnet18 at 32 px with batch 4 on the CPU", "[batch_finder]") {
  const ltfit::Config config = tiny_config(32);
  const ltfit::TrialMemory m = ltfit::run_batch_trial(config, torch::Device(torch::kCPU), 4);
  CHECK(m.fits);
  CHECK(m.note.empty());
  CHECK_FALSE(m.skipped);
}

TEST_CASE("batch trials on the CPU respect the memory budget", "[batch_finder]") {
  const ltfit::Config config = tiny_config(64);
  const torch::Device cpu(torch::kCPU);
  ltfit::BatchFitOptions strict;
  strict.cpu_budget_bytes = 1;  // one byte: any measured growth is over it
  const ltfit::TrialMemory m = ltfit::run_batch_trial(config, cpu, 64, strict);
  REQUIRE(m.bytes > 1);
  CHECK_FALSE(m.fits);
  CHECK(m.note.find("budget") != std::string::npos);

  // A predicate skips, without running, a batch its measurements predict to be over budget.
  ltfit::BatchFitOptions options;
  options.cpu_budget_bytes = std::int64_t{1} << 30;  // 1 GiB
  std::vector<ltfit::TrialMemory> reports;
  auto fits = ltfit::make_trial_predicate(
      tiny_config(32), cpu, options,
      [&](int, const ltfit::TrialMemory& r, double) { reports.push_back(r); });
  REQUIRE(fits(2));
  REQUIRE(reports.size() == 1);
  REQUIRE(reports[0].bytes > (1 << 16));  // at least something measured for the prediction
  CHECK_FALSE(fits(2'000'000));           // 2e6 x 3 x 32 x 32 floats would be 24 GB of input
  REQUIRE(reports.size() == 2);
  CHECK(reports[1].skipped);
  CHECK(reports[1].bytes > options.cpu_budget_bytes);
}

TEST_CASE("a batch trial refuses a precision the device cannot run", "[batch_finder]") {
  ltfit::Config config = tiny_config(32);
  config.train.precision = ltfit::Precision::kFp16;
  CHECK_THROWS_AS(ltfit::run_batch_trial(config, torch::Device(torch::kCPU), 2),
                  ltfit::ConfigError);
}

TEST_CASE("a trial failing for another reason than memory throws RuntimeError", "[batch_finder]") {
  // Batch 1 at 32 px leaves BatchNorm one value per channel: training cannot run at all.
  CHECK_THROWS_AS(ltfit::run_batch_trial(tiny_config(32), torch::Device(torch::kCPU), 1),
                  ltfit::RuntimeError);
}
