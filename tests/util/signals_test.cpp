// Stop signals: one request however often it is delivered within the repeat window, a
// deliberate later one stops at once without temporary files, SIGHUP counts as a stop, and
// StopMode::kExitNow ends with exit 130 after removing the live temporary files. The fatal cases
// run in a forked child so that this process survives them.
#include "ltfit/util/signals.h"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <thread>

#include "ltfit/util/temp_files.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using ltfit::StopMode;
using ltfit::StopSignals;

namespace {

// Runs `body` in a forked child and returns its wait status.
template <typename Body>
int in_child(Body&& body) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    body();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

// Creates `path` and registers it as a live temporary file.
void live_temp_file(const fs::path& path) {
  ::close(::open(path.c_str(), O_WRONLY | O_CREAT, 0644));
  ltfit::register_live_temp_file(path.string());
}

// Whether the flag is set within a second (another thread of this process may take a signal).
bool requested_soon() {
  for (int i = 0; i < 100 && !StopSignals::requested(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return StopSignals::requested();
}

}  // namespace

TEST_CASE("a repeat within the window is the same stop request", "[signals]") {
  CHECK(ltfit::repeats_stop_request(0));
  CHECK(ltfit::repeats_stop_request(50));
  CHECK(ltfit::repeats_stop_request(StopSignals::kRepeatWindowMs - 1));
  CHECK_FALSE(ltfit::repeats_stop_request(StopSignals::kRepeatWindowMs));
  CHECK_FALSE(ltfit::repeats_stop_request(60000));
}

TEST_CASE("SIGTERM twice 50 ms apart, then SIGINT, only set the flag", "[signals]") {
  StopSignals signals;
  StopSignals::reset();
  CHECK_FALSE(StopSignals::requested());
  ::kill(::getpid(), SIGTERM);  // what `timeout` does: the child, then its process group
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ::kill(::getpid(), SIGTERM);
  ::kill(::getpid(), SIGINT);  // `ltfit experiment` passing a Ctrl-C on
  CHECK(requested_soon());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // and this process lives on
  StopSignals::reset();
}

TEST_CASE("SIGHUP is a stop request", "[signals]") {
  StopSignals signals;
  StopSignals::reset();
  ::kill(::getpid(), SIGHUP);
  CHECK(requested_soon());
  StopSignals::reset();
}

TEST_CASE("a second request after the window stops at once and removes live temporaries",
          "[signals]") {
  ltfit::testing::TempDir dir;
  const fs::path temp = dir.path() / ".step-3.ckpt.Ab12Cd.tmp";
  const fs::path saved = dir.path() / "step-2.ckpt";
  ltfit::testing::write_file(saved, "saved");
  const int status = in_child([&] {
    StopSignals signals;
    live_temp_file(temp);
    ::kill(::getpid(), SIGTERM);
    if (!StopSignals::requested()) ::_exit(3);
    std::this_thread::sleep_for(std::chrono::milliseconds(StopSignals::kRepeatWindowMs + 200));
    ::kill(::getpid(), SIGTERM);  // deliberate: ends the process by SIGTERM
    ::_exit(4);
  });
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
  CHECK_FALSE(fs::exists(temp));
  CHECK(fs::exists(saved));  // what was saved stays
}

TEST_CASE("StopMode::kExitNow: the first signal exits 130 without the live temporaries",
          "[signals]") {
  ltfit::testing::TempDir dir;
  const fs::path temp = dir.path() / ".out.csv.Xy98Zw.tmp";
  const int status = in_child([&] {
    StopSignals signals(StopMode::kExitNow);
    live_temp_file(temp);
    ::kill(::getpid(), SIGINT);
    ::_exit(4);
  });
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  CHECK_FALSE(fs::exists(temp));
}
