// Phase timing: accumulation, exclusive nesting, epoch records, timing.json, memory peaks.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>
#include <vector>

#include <torch/cuda.h>
#include <torch/torch.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "ltfit/run/timing.h"
#include "support/test_support.h"

namespace {

using Clock = std::chrono::steady_clock;

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

double sum(const ltfit::PhaseSeconds& phases) {
  double total = 0.0;
  for (const double s : phases) total += s;
  return total;
}

constexpr std::int64_t kMebibyte = 1024 * 1024;

}  // namespace

TEST_CASE("phase names are the timing.json keys", "[report][timing]") {
  CHECK(std::string(ltfit::phase_name(ltfit::Phase::kDataWait)) == "data_wait");
  CHECK(std::string(ltfit::phase_name(ltfit::Phase::kHostToDevice)) == "host_to_device");
  CHECK(std::string(ltfit::phase_name(ltfit::Phase::kForward)) == "forward");
  CHECK(std::string(ltfit::phase_name(ltfit::Phase::kBackward)) == "backward");
  CHECK(std::string(ltfit::phase_name(ltfit::Phase::kOptimizer)) == "optimizer");
  CHECK(std::string(ltfit::phase_name(ltfit::Phase::kValidation)) == "validation");
  CHECK(std::string(ltfit::phase_name(ltfit::Phase::kTta)) == "tta");
  CHECK(std::string(ltfit::phase_name(ltfit::Phase::kCheckpoint)) == "checkpoint");
}

TEST_CASE("phases accumulate and their sum stays within the wall time", "[report][timing]") {
  ltfit::Profiler profiler(torch::kCPU, /*sync=*/true);
  const auto start = Clock::now();
  for (int i = 0; i < 2; ++i) {
    {
      ltfit::ScopedPhase phase(profiler, ltfit::Phase::kForward);
      sleep_ms(20);
    }
    ltfit::ScopedPhase phase(profiler, ltfit::Phase::kBackward);
    sleep_ms(10);
  }
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  CHECK(profiler.seconds(ltfit::Phase::kForward) >= 0.039);
  CHECK(profiler.seconds(ltfit::Phase::kForward) < 0.5);
  CHECK(profiler.seconds(ltfit::Phase::kBackward) >= 0.019);
  CHECK(profiler.seconds(ltfit::Phase::kBackward) < 0.5);
  CHECK(profiler.seconds(ltfit::Phase::kOptimizer) == 0.0);
  CHECK(profiler.seconds(ltfit::Phase::kDataWait) == 0.0);
  CHECK(sum(profiler.totals()) <= wall);
}

TEST_CASE("a nested phase pauses the outer one", "[report][timing]") {
  ltfit::Profiler profiler(torch::kCPU, /*sync=*/false);
  const auto start = Clock::now();
  {
    ltfit::ScopedPhase validation(profiler, ltfit::Phase::kValidation);
    sleep_ms(10);
    {
      ltfit::ScopedPhase wait(profiler, ltfit::Phase::kDataWait);
      sleep_ms(30);
    }
    sleep_ms(10);
  }
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  const double validation = profiler.seconds(ltfit::Phase::kValidation);
  const double wait = profiler.seconds(ltfit::Phase::kDataWait);
  CHECK(wait >= 0.029);
  CHECK(validation >= 0.019);
  CHECK(validation + wait <= wall);  // the 30 ms inside data_wait are not counted twice
}

TEST_CASE("an end without its begin is a bug", "[report][timing]") {
  ltfit::Profiler profiler(torch::kCPU, /*sync=*/false);
  CHECK_THROWS_AS(profiler.end(ltfit::Phase::kForward), std::logic_error);
  profiler.begin(ltfit::Phase::kForward);
  CHECK_THROWS_AS(profiler.end(ltfit::Phase::kBackward), std::logic_error);
  CHECK_THROWS_AS(profiler.end_epoch(1), std::logic_error);  // forward is still open
  profiler.end(ltfit::Phase::kForward);
  CHECK(profiler.seconds(ltfit::Phase::kForward) >= 0.0);
}

TEST_CASE("epoch records hold the epoch's phases, throughput and memory", "[report][timing]") {
  ltfit::Profiler profiler(torch::kCPU, /*sync=*/false);
  profiler.begin_epoch(3);
  {
    ltfit::ScopedPhase phase(profiler, ltfit::Phase::kForward);
    sleep_ms(20);
  }
  {
    ltfit::ScopedPhase phase(profiler, ltfit::Phase::kValidation);
    sleep_ms(20);
  }
  const ltfit::EpochTiming first = profiler.end_epoch(100);
  CHECK(first.epoch == 3);
  CHECK(first.train_images == 100);
  CHECK(first.phases[static_cast<int>(ltfit::Phase::kForward)] >= 0.019);
  CHECK(sum(first.phases) <= first.wall_seconds);
  const double train =
      first.wall_seconds - first.phases[static_cast<int>(ltfit::Phase::kValidation)];
  CHECK(first.images_per_second == Approx(100.0 / train));
  CHECK(first.peak_rss_bytes > 0);
  CHECK_FALSE(first.peak_gpu_bytes.has_value());

  profiler.begin_epoch(4);
  {
    ltfit::ScopedPhase phase(profiler, ltfit::Phase::kBackward);
    sleep_ms(5);
  }
  const ltfit::EpochTiming second = profiler.end_epoch(50);
  CHECK(second.phases[static_cast<int>(ltfit::Phase::kForward)] == 0.0);  // reset per epoch
  CHECK(second.phases[static_cast<int>(ltfit::Phase::kBackward)] >= 0.004);
  CHECK(profiler.seconds(ltfit::Phase::kForward) ==
        first.phases[static_cast<int>(ltfit::Phase::kForward)]);
  REQUIRE(profiler.epochs().size() == 2);
  CHECK(profiler.epochs()[1].epoch == 4);
}

TEST_CASE("timing.json has every field and parses", "[report][timing]") {
  ltfit::testing::TempDir dir;
  ltfit::Profiler profiler(torch::kCPU, /*sync=*/false);
  profiler.begin_epoch(0);
  {
    ltfit::ScopedPhase phase(profiler, ltfit::Phase::kDataWait);
    sleep_ms(5);
  }
  profiler.end_epoch(32);
  const std::string path = (dir.path() / "timing.json").string();
  ltfit::write_timing_json(path, profiler, /*train_seconds=*/12.5, /*tta_seconds=*/2.0);
  const auto j = nlohmann::json::parse(ltfit::testing::read_file(path));
  REQUIRE(j["phases"].size() == 9u);
  CHECK(j["phases"]["grad_sync"].get<double>() == 0.0);  // one process: nothing to all-reduce
  CHECK(j["phases"]["data_wait"].get<double>() >= 0.004);
  CHECK(j["phases"]["checkpoint"].get<double>() == 0.0);
  REQUIRE(j["epochs"].size() == 1u);
  CHECK(j["epochs"][0]["train_images"] == 32);
  CHECK(j["epochs"][0]["phases"].size() == 9u);
  CHECK(j["epochs"][0]["peak_gpu_bytes"].is_null());
  CHECK(j["epochs"][0].contains("images_per_second"));
  CHECK(j["train_seconds"].get<double>() == 12.5);
  CHECK(j["tta_seconds"].get<double>() == 2.0);
  CHECK(j["total_seconds"].get<double>() == 14.5);
  CHECK(j["sync"] == false);
  CHECK(j["device"].get<std::string>().rfind("cpu", 0) == 0);
  CHECK(j["peak_rss_bytes"].get<std::int64_t>() > 0);
  CHECK(j["peak_gpu_bytes"].is_null());

  const auto no_tta = nlohmann::json::parse(ltfit::timing_json(profiler, 3.0, std::nullopt));
  CHECK(no_tta["tta_seconds"].is_null());
  CHECK(no_tta["total_seconds"].get<double>() == 3.0);
}

TEST_CASE("peak RSS grows after touching 50 MB above it", "[report][timing]") {
  const std::int64_t peak_before = ltfit::peak_rss_bytes();
  const std::int64_t current_before = ltfit::current_rss_bytes();
  REQUIRE(peak_before > 0);
  REQUIRE(current_before > 0);
  // Earlier tests may have raised the peak; allocate enough to pass it by 50 MB.
  const std::int64_t bytes =
      std::max<std::int64_t>(0, peak_before - current_before) + 50 * kMebibyte;
  std::vector<char> block(static_cast<std::size_t>(bytes));
  std::memset(block.data(), 1, block.size());  // touch every page
  CHECK(ltfit::current_rss_bytes() >= current_before + 45 * kMebibyte);
  CHECK(ltfit::peak_rss_bytes() >= peak_before + 40 * kMebibyte);
  CHECK(block[block.size() / 2] == 1);
}

TEST_CASE("the heap in use counts reused memory the resident set does not", "[report][timing]") {
  const std::int64_t before = ltfit::heap_in_use_bytes();
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  REQUIRE(before > 0);
#endif
  if (before == 0) {
    WARN("skipped: this allocator does not report its heap in use");
    return;
  }
  {
    // Freed, then allocated again: resident already, so only the heap's count shows it.
    std::vector<char> first(static_cast<std::size_t>(20 * kMebibyte), 1);
  }
  const torch::Tensor block = torch::ones({5 * kMebibyte}, torch::kFloat32);  // 20 MiB
  CHECK(ltfit::heap_in_use_bytes() >= before + 19 * kMebibyte);
  CHECK(block.sum().item<double>() == 5.0 * kMebibyte);
}

TEST_CASE("the phase table shows mm:ss and shares", "[report][timing]") {
  ltfit::PhaseSeconds phases{};
  phases[static_cast<int>(ltfit::Phase::kForward)] = 30.0;
  phases[static_cast<int>(ltfit::Phase::kBackward)] = 90.0;
  const std::string table = ltfit::format_phase_table(phases);
  INFO(table);
  CHECK_THAT(table,
             Catch::Contains("forward") && Catch::Contains("00:30") && Catch::Contains("25.0%"));
  CHECK_THAT(table,
             Catch::Contains("backward") && Catch::Contains("01:30") && Catch::Contains("75.0%"));
  CHECK_THAT(table,
             Catch::Contains("total") && Catch::Contains("02:00") && Catch::Contains("100.0%"));
  CHECK(std::count(table.begin(), table.end(), '\n') == 10);  // header + 9 phases, then total
}

TEST_CASE("GPU phases synchronize and peak memory is tracked", "[report][timing][cuda]") {
  REQUIRE(torch::cuda::is_available());
  const torch::Device device(torch::kCUDA, 0);
  ltfit::Profiler profiler(device, /*sync=*/true);
  profiler.begin_epoch(0);
  torch::Tensor big;
  {
    ltfit::ScopedPhase phase(profiler, ltfit::Phase::kForward);
    big = torch::randn({4096, 4096}, device);  // 64 MiB
    for (int i = 0; i < 20; ++i) big = torch::matmul(big, big).tanh_();
  }
  const ltfit::EpochTiming epoch = profiler.end_epoch(1);
  REQUIRE(epoch.peak_gpu_bytes.has_value());
  CHECK(*epoch.peak_gpu_bytes >= 64 * kMebibyte);
  CHECK(epoch.phases[static_cast<int>(ltfit::Phase::kForward)] > 0.0);
  big = torch::Tensor();
  ltfit::reset_cuda_peak_memory(device);
  const auto after = ltfit::cuda_peak_memory_bytes(device);
  REQUIRE(after.has_value());
  CHECK(*after < *epoch.peak_gpu_bytes);
}
