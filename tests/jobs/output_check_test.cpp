// check_output_file names the part of the path that fails and why: the first missing folder it
// cannot create under /proc (which exists), a file in the way, and nothing left behind when the
// path can be written.
#include <catch2/catch.hpp>

#include <filesystem>

#include "ltfit/jobs/output_check.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

std::string failure_of(const fs::path& file) {
  try {
    ltfit::check_output_file(file, "predictions file (--out)");
  } catch (const ltfit::RuntimeError& e) {
    CHECK(e.exit_code() == ltfit::ExitCode::kRuntime);
    return e.what();
  }
  FAIL("expected a RuntimeError for " << file);
  return "";
}

}  // namespace

TEST_CASE("check_output_file names the first part of the path that fails, and why", "[jobs]") {
  const std::string proc = failure_of("/proc/nope/x/predictions.csv");
  CHECK_THAT(proc,
             Contains("cannot write predictions file (--out) '/proc/nope/x/predictions.csv'"));
  CHECK_THAT(proc, Contains("cannot create '/proc/nope': ") &&
                       Contains("(the parent '/proc' exists but is on a proc file system"));
  CHECK_THAT(failure_of("/proc/p.csv"),
             Contains("cannot create a file in '/proc': ") && Contains("proc file system"));
  CHECK_THAT(failure_of("/dev/null/sub/p.csv"), Contains("'/dev/null' is not a folder"));

  ltfit::testing::TempDir dir;
  ltfit::testing::write_file(dir.path() / "a-file", "x");
  CHECK_THAT(failure_of(dir.path() / "a-file/deeper/p.csv"),
             Contains("'" + dir.str() + "/a-file' is not a folder"));
  CHECK_THAT(failure_of(dir.path()), Contains("it is a folder"));
  // Writable: nothing thrown, nothing left behind.
  ltfit::check_output_file(dir.path() / "new/sub/p.csv", "p");
  ltfit::check_output_file(dir.path() / "p.csv", "p");
  CHECK_FALSE(fs::exists(dir.path() / "new"));
  CHECK(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()) == 1);
}
