// Files that cannot serve (image_problems.h): a truncated JPEG, a text file named .jpg, an
// empty file, a FIFO, a 10000x10 PNG, an 8x8 image, headers claiming 100000x100000 pixels (never
// decoded: checked under an address-space cap), a format outside data.formats, and fine images.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <string>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "data/hostile_images.h"
#include "ltfit/data/image_problems.h"
#include "support/test_support.h"

namespace fs = std::filesystem;

using ltfit::ImageProblem;

namespace {

void write_problem_image(const fs::path& path, int width, int height) {
  cv::Mat image(height, width, CV_8UC3);
  cv::randu(image, cv::Scalar::all(0), cv::Scalar::all(255));
  REQUIRE(cv::imwrite(path.string(), image));
}

ltfit::ImageCheck checked(const fs::path& path, const ltfit::ImageProblemLimits& limits = {}) {
  const ltfit::ImageCheck c = ltfit::check_image_file(path.string(), limits);
  INFO(path.filename().string() << ": " << ltfit::image_problem_name(c.problem) << " (" << c.detail
                                << ")");
  return c;
}

}  // namespace

TEST_CASE("image problems: fine images pass", "[image_problems]") {
  ltfit::testing::TempDir dir;
  write_problem_image(dir.path() / "fine.jpg", 320, 240);
  write_problem_image(dir.path() / "fine.png", 64, 300);  // aspect 4.7, under 5
  write_problem_image(dir.path() / "edge.png", 32, 160);  // exactly at both limits
  for (const char* name : {"fine.jpg", "fine.png", "edge.png"}) {
    const ltfit::ImageCheck c = checked(dir.path() / name);
    CHECK(c.problem == ImageProblem::kNone);
    CHECK(c.detail.empty());
  }
  const ltfit::ImageCheck c = checked(dir.path() / "fine.jpg");
  CHECK(c.width == 320);
  CHECK(c.height == 240);
}

TEST_CASE("image problems: unreadable files say why", "[image_problems]") {
  ltfit::testing::TempDir dir;
  const fs::path d = dir.path();
  write_problem_image(d / "good.jpg", 200, 150);
  const std::string good = ltfit::testing::read_file(d / "good.jpg");
  ltfit::testing::write_file(d / "cut.jpg", good.substr(0, good.size() / 2));
  ltfit::testing::write_file(d / "text.jpg", "not an image, only text\n");
  ltfit::testing::write_file(d / "empty.jpg", "");
  ltfit::testing::write_file(d / "hdr.jpg", ltfit::testing::hdr_claiming(64, 64));
  REQUIRE(::mkfifo((d / "fifo.jpg").c_str(), 0600) == 0);
  // A PNG whose header is sound but whose pixel data is not.
  ltfit::testing::write_file(d / "no_pixels.png", ltfit::testing::png_claiming(64, 64));
  const auto reason = [&](const char* name) {
    const ltfit::ImageCheck c = checked(d / name);
    CHECK(c.problem == ImageProblem::kUnreadable);
    return c.detail;
  };
  CHECK_THAT(reason("cut.jpg"), Catch::Contains("truncated"));
  CHECK_THAT(reason("text.jpg"), Catch::Contains("not a decodable image"));
  CHECK_THAT(reason("empty.jpg"), Catch::Contains("empty"));
  CHECK_THAT(reason("hdr.jpg"), Catch::Contains("data.formats"));
  CHECK_THAT(reason("fifo.jpg"), Catch::Contains("FIFO"));
  CHECK_THAT(reason("missing.jpg"), Catch::Contains("not found"));
  CHECK_THAT(reason("no_pixels.png"), Catch::Contains("decoder failed"));
  CHECK(ltfit::image_problem_name(ImageProblem::kUnreadable) == "unreadable");
}

TEST_CASE("image problems: too small and extreme aspect ratios", "[image_problems]") {
  ltfit::testing::TempDir dir;
  write_problem_image(dir.path() / "tiny.png", 8, 8);
  write_problem_image(dir.path() / "strip.png", 10000, 10);
  write_problem_image(dir.path() / "banner.jpg", 1200, 200);  // 6:1
  const ltfit::ImageCheck tiny = checked(dir.path() / "tiny.png");
  CHECK(tiny.problem == ImageProblem::kTooSmall);
  CHECK(tiny.width == 8);
  CHECK_THAT(tiny.detail, Catch::Contains("8x8"));
  // A 10-pixel side is under min_side before the aspect ratio is looked at.
  CHECK(checked(dir.path() / "strip.png").problem == ImageProblem::kTooSmall);
  const ltfit::ImageCheck banner = checked(dir.path() / "banner.jpg");
  CHECK(banner.problem == ImageProblem::kExtremeAspect);
  CHECK_THAT(banner.detail, Catch::Contains("1200x200"));
  ltfit::ImageProblemLimits lenient;
  lenient.min_side = 8;
  lenient.max_aspect = 1000;
  CHECK(checked(dir.path() / "tiny.png", lenient).problem == ImageProblem::kNone);
  CHECK(checked(dir.path() / "strip.png", lenient).problem == ImageProblem::kNone);
  lenient.max_aspect = 100;
  CHECK(checked(dir.path() / "strip.png", lenient).problem == ImageProblem::kExtremeAspect);
  CHECK(ltfit::image_problem_name(ImageProblem::kTooSmall) == "too_small");
  CHECK(ltfit::image_problem_name(ImageProblem::kExtremeAspect) == "extreme_aspect");
}

TEST_CASE("image problems: headers over the pixel budget are refused without a decode",
          "[image_problems]") {
  ltfit::testing::TempDir dir;
  const fs::path d = dir.path();
  ltfit::testing::write_file(d / "huge.png", ltfit::testing::png_claiming(100000, 100000));
  ltfit::testing::write_file(d / "huge.jpg", ltfit::testing::progressive_jpeg(60000, 60000));
  ltfit::testing::write_file(d / "huge.tif", ltfit::testing::tiff_claiming(100000, 100000));
  // 512 MiB more than the process already maps: decoding any of them would need gigabytes.
  const auto run = ltfit::testing::run_capped(
      [&] {
        std::string out;
        for (const char* name : {"huge.png", "huge.jpg", "huge.tif"}) {
          const ltfit::ImageCheck c = ltfit::check_image_file((d / name).string());
          out += ltfit::image_problem_name(c.problem) + " " + std::to_string(c.width) + "\n";
        }
        return out;
      },
      512ULL << 20);
  REQUIRE(run.exited);
  CHECK(run.output ==
        "over_pixel_budget 100000\nover_pixel_budget 60000\n"
        "over_pixel_budget 100000\n");
  const ltfit::ImageCheck c = checked(d / "huge.png");
  CHECK_THAT(c.detail, Catch::Contains("data.max_pixels"));
  CHECK(c.height == 100000);
  // A smaller budget makes an ordinary image over it.
  write_problem_image(d / "fine.jpg", 320, 240);
  ltfit::ImageProblemLimits tight;
  tight.image.max_pixels = 320 * 240 - 1;
  CHECK(checked(d / "fine.jpg", tight).problem == ImageProblem::kOverPixelBudget);
  CHECK(ltfit::image_problem_name(ImageProblem::kOverPixelBudget) == "over_pixel_budget");
}
