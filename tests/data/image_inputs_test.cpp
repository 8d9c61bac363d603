// expand_image_inputs: predict's files, folders and glob patterns to image files, in a fixed
// order, each once; every argument that names no image is a DataError naming it.
#include "ltfit/data/image_inputs.h"

#include <sys/stat.h>

#include <filesystem>

#include <catch2/catch.hpp>

#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::expand_image_inputs;
using ltfit::testing::TempDir;
using ltfit::testing::write_file;

// b/, a/ written out of order, with files that are not images, hidden ones and odd kinds.
void write_tree(const fs::path& d) {
  for (const char* name : {"b/2.jpg", "b/1.PNG", "a/z/9.jpeg", "a/3.bmp", "a/notes.txt",
                           "a/.hidden.jpg", ".cache/0.jpg", "top.webp"}) {
    write_file(d / name, "x");
  }
  fs::create_directories(d / "a/folder.jpg");  // a folder named like an image: searched, not kept
  write_file(d / "a/folder.jpg/4.tif", "x");
  REQUIRE(::mkfifo((d / "b/pipe.jpg").c_str(), 0600) == 0);  // kept: the loader names it
}

}  // namespace

TEST_CASE("a folder gives its image files, recursively, sorted, hidden ones left out",
          "[data][predict]") {
  TempDir dir;
  write_tree(dir.path());
  const std::string d = dir.str();
  CHECK(expand_image_inputs({d}) ==
        std::vector<std::string>{d + "/a/3.bmp", d + "/a/folder.jpg/4.tif", d + "/a/z/9.jpeg",
                                 d + "/b/1.PNG", d + "/b/2.jpg", d + "/b/pipe.jpg",
                                 d + "/top.webp"});
}

TEST_CASE("files as given, patterns expanded and sorted, arguments in order, each path once",
          "[data][predict]") {
  TempDir dir;
  write_tree(dir.path());
  const std::string d = dir.str();
  CHECK(expand_image_inputs({d + "/a/notes.txt", d + "/b/*", d + "/b/2.jpg", d + "/a/?"}) ==
        std::vector<std::string>{d + "/a/notes.txt", d + "/b/1.PNG", d + "/b/2.jpg",
                                 d + "/b/pipe.jpg", d + "/a/z/9.jpeg"});
}

TEST_CASE("a folder without images, a pattern without a match, a missing path: DataError",
          "[data][predict]") {
  TempDir dir;
  write_tree(dir.path());
  fs::create_directories(dir.path() / "empty/deep");
  write_file(dir.path() / "empty/deep/readme.md", "x");
  const std::string d = dir.str();
  CHECK_THROWS_WITH(expand_image_inputs({d + "/a", d + "/empty"}),
                    Contains("folder '" + d + "/empty' holds no image file"));
  CHECK_THROWS_WITH(expand_image_inputs({d + "/*.gif"}),
                    Contains("'" + d + "/*.gif' matches no image file"));
  CHECK_THROWS_WITH(expand_image_inputs({d + "/a/*.txt"}), Contains("matches no image file"));
  CHECK_THROWS_WITH(expand_image_inputs({d + "/missing.jpg"}),
                    Contains("'" + d + "/missing.jpg' does not exist"));
  CHECK_THROWS_AS(expand_image_inputs({d + "/missing.jpg"}), ltfit::DataError);
}

TEST_CASE("** in a pattern stands for any number of folders, none included, as Python's glob",
          "[data][predict]") {
  TempDir dir;
  write_tree(dir.path());
  const std::string d = dir.str();
  // As glob.glob(d + "/**/*.jpg", recursive=True): hidden files and folders left out, the
  // folder named folder.jpg searched (its images kept), the FIFO kept.
  CHECK(expand_image_inputs({d + "/**/*.jpg"}) ==
        std::vector<std::string>{d + "/a/folder.jpg/4.tif", d + "/b/2.jpg", d + "/b/pipe.jpg"});
  CHECK(expand_image_inputs({d + "/a/**/*.jpeg"}) == std::vector<std::string>{d + "/a/z/9.jpeg"});
  CHECK(expand_image_inputs({d + "/**/3.bmp"}) == std::vector<std::string>{d + "/a/3.bmp"});
  CHECK(expand_image_inputs({d + "/**/top.webp"}) == std::vector<std::string>{d + "/top.webp"});
  CHECK_THROWS_WITH(expand_image_inputs({d + "/**/*.gif"}), Contains("matches no image file"));
}
