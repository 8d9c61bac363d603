// ltfit's temporary files: the names recognised, and stale ones removed without touching a live
// writer's file, a fresh one, a symlink or anything of another naming.
#include "ltfit/util/temp_files.h"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "ltfit/util/atomic_file.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using ltfit::is_temp_file_name;

namespace {

// Writes `path` and dates it a minute back.
void old_file(const fs::path& path) {
  ltfit::testing::write_file(path, "partial");
  fs::last_write_time(path, fs::file_time_type::clock::now() - std::chrono::minutes(1));
}

}  // namespace

TEST_CASE("is_temp_file_name knows AtomicFile's and the download's names only", "[temp_files]") {
  CHECK(is_temp_file_name(".step-12.ckpt.Ab12Cd.tmp"));
  CHECK(is_temp_file_name(".step-12.ckpt.Ab12Cd.tmp", "step-12.ckpt"));
  CHECK_FALSE(is_temp_file_name(".step-12.ckpt.Ab12Cd.tmp", "step-1.ckpt"));
  CHECK(is_temp_file_name("resnet18-f37072fd.pth.partial-0123456789abcdef"));
  CHECK(
      is_temp_file_name("resnet18-f37072fd.pth.partial-0123456789abcdef", "resnet18-f37072fd.pth"));
  for (const char* name :
       {"step-12.ckpt", ".hidden.tmp", "notes.Ab12Cd.tmp", ".x.Ab12C.tmp", ".x.Ab-2Cd.tmp",
        ".x.Ab12Cd.tmp.bak", "x.partial-0123", "x.partial-0123456789abcdeg", ".Ab12Cd.tmp"}) {
    INFO(name);
    CHECK_FALSE(is_temp_file_name(name));
  }
}

TEST_CASE("remove_stale_temp_files removes leftovers, never a live or a user's file",
          "[temp_files]") {
  ltfit::testing::TempDir dir;
  const fs::path d = dir.path();
  old_file(d / ".step-3.ckpt.Ab12Cd.tmp");                           // stale: removed
  old_file(d / "w.pth.partial-0123456789abcdef");                    // stale: removed
  old_file(d / ".notes.tmp");                                        // not our naming
  old_file(d / "step-3.ckpt");                                       // a result
  ltfit::testing::write_file(d / ".fresh.csv.Zz99Yy.tmp", "young");  // maybe being created
  fs::create_symlink(d / "step-3.ckpt", d / ".link.ckpt.Qq11Rr.tmp");
  ltfit::AtomicFile live((d / "live.csv").string());  // a writer holding its temporary
  live.write("rows");
  fs::last_write_time(live.temp_path(), fs::file_time_type::clock::now() - std::chrono::minutes(1));

  auto removed = ltfit::remove_stale_temp_files(d.string());
  std::sort(removed.begin(), removed.end());
  CHECK(removed == std::vector<std::string>{(d / ".step-3.ckpt.Ab12Cd.tmp").string(),
                                            (d / "w.pth.partial-0123456789abcdef").string()});
  CHECK(fs::exists(d / ".notes.tmp"));
  CHECK(fs::exists(d / "step-3.ckpt"));
  CHECK(fs::exists(d / ".fresh.csv.Zz99Yy.tmp"));
  CHECK(fs::is_symlink(d / ".link.ckpt.Qq11Rr.tmp"));
  CHECK(fs::exists(live.temp_path()));
  live.commit();
  CHECK(ltfit::testing::read_file(d / "live.csv") == "rows");

  SECTION("with a target, only that file's temporaries") {
    old_file(d / ".a.csv.Ab12Cd.tmp");
    old_file(d / ".b.csv.Ab12Cd.tmp");
    CHECK(ltfit::remove_stale_temp_files(d.string(), "a.csv").size() == 1);
    CHECK(fs::exists(d / ".b.csv.Ab12Cd.tmp"));
  }
}
