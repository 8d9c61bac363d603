// An image file the system cannot open or read (EMFILE, ENFILE, ENOMEM, EIO) is no unreadable
// image: the call is retried with a short backoff, then the run stops with a RuntimeError (exit 5)
// naming the file, the errno and, for EMFILE, the open-file limit. Before, such files were
// skipped as "cannot open: Too many open files" and a run scored the rest, exit 0 (issue 40).
// The file's own failures (EACCES, ENOENT) are still skipped at once.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <map>
#include <mutex>

#include <torch/torch.h>
#include <catch2/catch.hpp>

#include "data/decode.h"
#include "data/system_io.h"
#include "ltfit/data/image_problems.h"
#include "ltfit/data/loader.h"
#include "ltfit/data/readable_images.h"
#include "support/test_support.h"

using Catch::Matchers::Contains;

namespace {

// Injects `error_number` into the first `times` attempts of `operation` on paths containing
// `needle` (times < 0: every attempt), counting the attempts; removed on destruction.
class FaultGuard {
 public:
  FaultGuard(std::string operation, std::string needle, int error_number, int times)
      : operation_(std::move(operation)), needle_(std::move(needle)) {
    ltfit::set_io_fault_for_testing(
        [this, error_number, times](const std::string& operation, const std::string& path) {
          if (operation != operation_ || path.find(needle_) == std::string::npos) return 0;
          const int n = attempts_++;
          return times < 0 || n < times ? error_number : 0;
        });
  }
  ~FaultGuard() { ltfit::set_io_fault_for_testing({}); }
  FaultGuard(const FaultGuard&) = delete;
  FaultGuard& operator=(const FaultGuard&) = delete;
  int attempts() const { return attempts_; }

 private:
  std::string operation_;
  std::string needle_;
  std::atomic<int> attempts_{0};
};

double seconds_of(const std::function<void()>& body) {
  const auto start = std::chrono::steady_clock::now();
  body();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

ltfit::LoaderOptions loader_options(bool train) {
  ltfit::LoaderOptions o;
  o.data.image_size = 16;
  o.data.batch_size = 4;
  o.train = train;
  o.seed = 3;
  o.data.workers = 2;
  return o;
}

}  // namespace

TEST_CASE("a passing EMFILE is retried and the image read, a lasting one stops with exit 5",
          "[data][system_io]") {
  ltfit::testing::TempDir dir;
  const auto samples = ltfit::testing::write_small_synth(dir.path(), 4, 2, 32, 40, 7);
  const std::string path = samples[1].path;
  {
    FaultGuard fault("open", path, EMFILE, 3);  // three failures, then the limit is back
    std::string reason = "not run";
    const double seconds = seconds_of([&] { reason = ltfit::probe_image_file(path, {}); });
    CHECK(reason.empty());
    CHECK(fault.attempts() == 4);
    CHECK(seconds >= 0.075);  // paused 10 + 20 + 50 ms
  }
  FaultGuard fault("open", path, EMFILE, -1);
  try {
    const double seconds = seconds_of([&] { (void)ltfit::probe_image_file(path, {}); });
    FAIL("no error after " << seconds << " s");
  } catch (const ltfit::RuntimeError& e) {
    CHECK(e.exit_code() == ltfit::ExitCode::kRuntime);
    CHECK_THAT(e.what(), Contains("cannot open image file '" + path + "'") &&
                             Contains("Too many open files (EMFILE)") &&
                             Contains("still after 6 tries") &&
                             Contains("open-file limit (ulimit -n) is "));
    CHECK_THAT(e.hint(), Contains("raise the open-file limit"));
  }
  CHECK(fault.attempts() == ltfit::kSystemIoTries);
}

TEST_CASE("the file's own errors are not retried: EACCES is skipped as before",
          "[data][system_io]") {
  ltfit::testing::TempDir dir;
  const auto samples = ltfit::testing::write_small_synth(dir.path(), 2, 2, 32, 40, 7);
  FaultGuard fault("open", samples[0].path, EACCES, -1);
  CHECK(ltfit::probe_image_file(samples[0].path, {}) == "cannot open: Permission denied");
  CHECK(fault.attempts() == 1);
  CHECK(ltfit::is_system_errno(EMFILE));
  CHECK(ltfit::is_system_errno(ENFILE));
  CHECK(ltfit::is_system_errno(ENOMEM));
  CHECK(ltfit::is_system_errno(EIO));
  CHECK_FALSE(ltfit::is_system_errno(ENOENT));
  CHECK_FALSE(ltfit::is_system_errno(EACCES));
}

TEST_CASE("EIO on a read stops the run naming the file, never a skipped image",
          "[data][system_io]") {
  ltfit::testing::TempDir dir;
  const auto samples = ltfit::testing::write_small_synth(dir.path(), 2, 2, 32, 40, 7);
  FaultGuard fault("read", samples[0].path, EIO, -1);
  std::string error;
  CHECK_THROWS_WITH(ltfit::load_square_image(samples[0].path, 16, {}, &error),
                    Contains("cannot read image file '" + samples[0].path + "'") &&
                        Contains("(EIO)") && Contains("I/O error"));
  CHECK_THROWS_AS(ltfit::check_image_file(samples[0].path), ltfit::RuntimeError);
}

TEST_CASE("a loader stops on the system's failure: training, its header check, validation",
          "[data][system_io][loader]") {
  ltfit::testing::TempDir dir;
  const auto samples = ltfit::testing::write_small_synth(dir.path(), 12, 2, 32, 40, 7);
  const std::string victim = samples[5].path;
  SECTION("the header check at the start") {
    FaultGuard fault("open", victim, EMFILE, -1);
    CHECK_THROWS_AS(ltfit::Loader(samples, loader_options(true)), ltfit::RuntimeError);
    CHECK_THROWS_WITH(ltfit::check_readable(samples, {}, 2), Contains(victim));
  }
  SECTION("decoding during an epoch, train and validation") {
    for (const bool train : {true, false}) {
      ltfit::Loader loader(samples, loader_options(train));
      FaultGuard fault("open", victim, ENFILE, -1);
      loader.start_epoch(0);
      try {
        while (loader.next()) {
        }
        FAIL("the epoch ended as if " << victim << " were unreadable");
      } catch (const ltfit::DataError& e) {
        FAIL("a data error (exit 3): " << e.what());
      } catch (const ltfit::RuntimeError& e) {
        CHECK_THAT(e.what(), Contains(victim) && Contains("(ENFILE)"));
      }
      CHECK(loader.skipped().count == 0);  // not counted as an unreadable image
    }
  }
}

// The real thing: a child process whose open-file limit is the lowest free descriptor, so that
// every open fails with EMFILE from the kernel.
TEST_CASE("under a real open-file limit the error names the limit", "[data][system_io]") {
  ltfit::testing::TempDir dir;
  const auto samples = ltfit::testing::write_small_synth(dir.path(), 2, 2, 32, 40, 7);
  const std::string message_file = dir.str() + "/message.txt";
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    FILE* out = std::fopen(message_file.c_str(), "w");
    const int lowest_free = ::dup(0);
    ::close(lowest_free);
    struct rlimit limit {};
    ::getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = static_cast<rlim_t>(lowest_free);
    if (out == nullptr || ::setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(3);
    std::fprintf(out, "%d\n", lowest_free);
    try {
      const std::string reason = ltfit::probe_image_file(samples[0].path, {});
      std::fprintf(out, "no error: '%s'", reason.c_str());
      std::fclose(out);
      _exit(1);
    } catch (const ltfit::RuntimeError& e) {
      std::fprintf(out, "%s", e.what());
      std::fclose(out);
      _exit(0);
    }
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  const std::string message = ltfit::testing::read_file(message_file);
  INFO(message);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  const std::string limit = message.substr(0, message.find('\n'));
  CHECK_THAT(message, Contains(samples[0].path) && Contains("(EMFILE)") &&
                          Catch::Matchers::EndsWith("open-file limit (ulimit -n) is " + limit));
}
