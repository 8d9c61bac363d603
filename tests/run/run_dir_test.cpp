// Run directories (report/run_dir.h): one writer at a time through an flock on `.lock` that
// names its holder; a new run skips a locked name; the lock goes with its holder.
#include "ltfit/run/run_dir.h"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::TempDir;

TEST_CASE("a run directory has one writer - the second is told who holds it", "[run_dir]") {
  TempDir dir;
  const fs::path run = dir.path() / "run";
  ltfit::OpenRunDir first = ltfit::create_run_dir({}, run.string());
  CHECK(first.lock.held());
  CHECK(fs::is_directory(run / "checkpoints"));
  const std::string pid = "pid " + std::to_string(getpid());

  std::string holder;
  CHECK_FALSE(ltfit::RunDirLock::try_acquire(run, &holder).has_value());
  CHECK_THAT(holder, Contains(pid) && Contains("on host") && Contains("since"));
  try {
    ltfit::open_run_dir_to_continue(run);
    FAIL("expected a ConfigError");
  } catch (const ltfit::ConfigError& e) {
    CHECK_THAT(e.what(), Contains(run.string()) && Contains(pid));
  }

  // Released with its holder (here: its object; in a crash: its process).
  first = ltfit::OpenRunDir{};
  CHECK(ltfit::open_run_dir_to_continue(run).lock.held());
}

TEST_CASE("a new run takes the next name when the first is locked by a starting run", "[run_dir]") {
  TempDir dir;
  ltfit::RunConfig config;
  config.out_dir = dir.str();
  config.name = "exp";
  // A run that has locked exp/ but not written anything yet.
  fs::create_directories(dir.path() / "exp");
  std::optional<ltfit::RunDirLock> starting = ltfit::RunDirLock::try_acquire(dir.path() / "exp");
  REQUIRE(starting.has_value());
  const ltfit::OpenRunDir second = ltfit::create_run_dir(config, std::nullopt);
  CHECK(second.path == dir.path() / "exp-2");
  // And an explicit --run-dir that is locked is refused, naming the holder.
  CHECK_THROWS_AS(ltfit::create_run_dir(config, (dir.path() / "exp").string()), ltfit::ConfigError);
}

TEST_CASE("the lock dies with a killed holder - a planted .lock symlink is never followed",
          "[run_dir]") {
  TempDir dir;
  const fs::path run = dir.path() / "run";
  fs::create_directories(run);
  int ready[2];
  REQUIRE(pipe(ready) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const auto lock = ltfit::RunDirLock::try_acquire(run);
    const char byte = lock ? '1' : '0';
    (void)!write(ready[1], &byte, 1);
    pause();  // killed by the parent
    _exit(0);
  }
  char byte = 0;
  REQUIRE(read(ready[0], &byte, 1) == 1);
  REQUIRE(byte == '1');
  CHECK_FALSE(ltfit::RunDirLock::try_acquire(run).has_value());
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  CHECK(ltfit::RunDirLock::try_acquire(run).has_value());
  close(ready[0]);
  close(ready[1]);

  const fs::path other = dir.path() / "other";
  fs::create_directories(other);
  const fs::path victim = dir.path() / "victim.txt";
  ltfit::testing::write_file(victim, "keep me");
  fs::create_symlink(victim, other / ".lock");
  CHECK_THROWS_AS(ltfit::RunDirLock::try_acquire(other), ltfit::RuntimeError);
  CHECK(ltfit::testing::read_file(victim) == "keep me");
}
