// Bounded reads of command-line input files (util/input_file.h): only regular files under the
// cap are read; /dev/zero, a FIFO with no writer, a directory and an oversized file are refused
// at once, naming the file. Each hostile read runs in a forked child with a memory cap and a
// deadline, so a regression fails the test instead of hanging it or eating the machine.
#include "ltfit/util/input_file.h"

#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using ltfit::testing::TempDir;

namespace {

constexpr int kRefused = 2;   // the child caught a ConfigError naming the file
constexpr int kAccepted = 3;  // the read returned (wrongly)
constexpr int kOther = 4;     // some other exception

// The address space this process maps now (/proc/self/statm, in bytes).
unsigned long long address_space_bytes() {
  unsigned long long pages = 0;
  if (FILE* statm = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(statm, "%llu", &pages) != 1) pages = 0;
    std::fclose(statm);
  }
  return pages * static_cast<unsigned long long>(sysconf(_SC_PAGESIZE));
}

// Runs read_input_file(path) in a child limited to 512 MiB of address space growth and 5 s;
// returns kRefused/kAccepted/kOther, or -1 if the child hung or died (e.g. out of memory).
int read_in_child(const std::string& path) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    rlimit capped{};
    capped.rlim_cur = capped.rlim_max = address_space_bytes() + (512ull << 20);
    setrlimit(RLIMIT_AS, &capped);
    alarm(5);
    try {
      ltfit::read_input_file(path, "config file");
      _exit(kAccepted);
    } catch (const ltfit::ConfigError& e) {
      _exit(std::string(e.what()).find(path) != std::string::npos ? kRefused : kOther);
    } catch (...) {
      _exit(kOther);
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("read_input_file reads a regular file under the cap", "[input_file]") {
  TempDir dir;
  const fs::path file = dir.path() / "c.yaml";
  ltfit::testing::write_file(file, "run: {seed: 1}\n");
  CHECK(ltfit::read_input_file(file.string(), "config file") == "run: {seed: 1}\n");
  ltfit::testing::write_file(file, "");
  CHECK(ltfit::read_input_file(file.string(), "config file").empty());
}

TEST_CASE("read_input_file refuses devices, FIFOs, directories and huge files at once",
          "[input_file]") {
  TempDir dir;
  SECTION("/dev/zero (endless)") { CHECK(read_in_child("/dev/zero") == kRefused); }
  SECTION("a FIFO nobody writes to (would block for ever)") {
    const fs::path fifo = dir.path() / "config.fifo";
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    CHECK(read_in_child(fifo.string()) == kRefused);
  }
  SECTION("a directory") { CHECK(read_in_child(dir.str()) == kRefused); }
  SECTION("a file over the cap (sparse: no disk used)") {
    const fs::path big = dir.path() / "big.yaml";
    ltfit::testing::write_file(big, "run: {}\n");
    fs::resize_file(big, 2ull << 30);
    CHECK(read_in_child(big.string()) == kRefused);
  }
  SECTION("a missing file") {
    CHECK(read_in_child((dir.path() / "nope.yaml").string()) == kRefused);
  }
}
