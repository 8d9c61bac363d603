// Every command that writes a file the user names refuses, before any work (exit 2, naming both
// paths), an output that is one of its inputs: the same path, another spelling of it, a symbolic
// link or a hard link to it. The input stays byte for byte as it was.
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::read_file;
using ltfit::testing::run_ltfit;
using ltfit::testing::write_file;

namespace {

// The ways an output can name `input`: itself, another spelling, a symbolic link, a hard link
// (the links made under `dir`, named after `tag`).
std::vector<fs::path> aliases_of(const fs::path& input, const fs::path& dir,
                                 const std::string& tag) {
  const fs::path symlink = dir / ("sym-" + tag), hardlink = dir / ("hard-" + tag);
  fs::create_symlink(input, symlink);
  fs::create_hard_link(input, hardlink);
  return {input, input.parent_path() / "." / input.filename(), symlink, hardlink};
}

// Runs `args` and checks the refusal: exit 2, both paths named, `input` unchanged.
void expect_refused(const std::string& args, const fs::path& shown_output, const fs::path& input) {
  const std::string before = read_file(input);
  const auto r = run_ltfit(args);
  INFO(args << "\n" << r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains(shown_output.string()) && Contains(input.string()));
  CHECK(read_file(input) == before);
}

// A folder under `dir` whose file `name` is a symbolic link, or a hard link, to `input`; and
// `input` itself as the folder.
std::vector<std::pair<fs::path, fs::path>> folders_holding(const fs::path& input,
                                                           const fs::path& dir,
                                                           const std::string& name,
                                                           const std::string& tag) {
  const fs::path sym = dir / ("symdir-" + tag), hard = dir / ("harddir-" + tag);
  fs::create_directories(sym);
  fs::create_directories(hard);
  fs::create_symlink(input, sym / name);
  fs::create_hard_link(input, hard / name);
  return {{input, input}, {sym, sym / name}, {hard, hard / name}};
}

}  // namespace

TEST_CASE("an output that is one of the command's inputs exits 2 before any work",
          "[cli][output]") {
  ltfit::testing::TempDir dir;
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/data --train 8 --valid 4 --seed 3").exit_code ==
          0);
  const fs::path config = dir.path() / "c.yaml";
  write_file(config,
             "run: {name: tiny, out_dir: " + dir.str() + "/runs, seed: 5}\n" + "data: {root: " +
                 dir.str() + "/data, image_size: 32, batch_size: 4, workers: 1}\n" +
                 "model: {arch: resnet18, pretrained: none}\n" +
                 "train: {recipe: one_cycle, epochs: 1, device: cpu}\neval: {tta: false}\n");
  const auto trained = run_ltfit("train --config " + config.string());
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);
  const fs::path ckpt = dir.path() / "runs/tiny/checkpoints/best.ckpt";
  REQUIRE(fs::exists(ckpt));
  fs::path image;
  for (const auto& e : fs::recursive_directory_iterator(dir.path() / "data/valid")) {
    if (e.is_regular_file()) image = e.path();
  }
  REQUIRE(!image.empty());
  const std::string c = " --checkpoint " + ckpt.string();

  // Commands writing one file.
  const std::vector<std::pair<std::string, std::function<std::string(const fs::path&)>>> files = {
      {"export", [&](const fs::path& o) { return "export" + c + " --out " + o.string(); }},
      {"predict",
       [&](const fs::path& o) {
         return "predict" + c + " --out " + o.string() + " " + image.string();
       }},
      {"calibrate", [&](const fs::path& o) { return "calibrate" + c + " --out " + o.string(); }},
      {"convert",
       [&](const fs::path& o) {
         return "convert-checkpoint --trust-code " + ckpt.string() + " " + o.string();
       }},
  };
  for (const auto& [tag, command] : files) {
    for (const fs::path& out : aliases_of(ckpt, dir.path(), tag)) {
      expect_refused(command(out), out, ckpt);
    }
  }
  for (const fs::path& out : aliases_of(image, dir.path(), "image")) {  // predict's images
    expect_refused("predict" + c + " --out " + out.string() + " " + image.string(), out, image);
  }
  // predict --cam: the picture of x.jpg, x_cam.png, is one of the images.
  fs::create_directories(dir.path() / "cam");
  fs::copy_file(image, dir.path() / "cam/x.jpg");
  fs::copy_file(image, dir.path() / "cam/x_cam.png");
  expect_refused("predict" + c + " --cam " + dir.str() + "/cam " + dir.str() + "/cam/x.jpg " +
                     dir.str() + "/cam/x_cam.png",
                 dir.path() / "cam/x_cam.png", dir.path() / "cam/x_cam.png");
  for (const fs::path& out : aliases_of(config, dir.path(), "config")) {  // the config file
    expect_refused("show-batch --config " + config.string() + " --out " + out.string(), out,
                   config);
  }

  // Commands writing into a folder: the folder is the input, or one of its files links to it.
  for (const auto& [folder, file] : folders_holding(ckpt, dir.path(), "predictions.csv", "e")) {
    expect_refused("evaluate" + c + " --out " + folder.string(), file, ckpt);
  }
  for (const auto& [folder, file] : folders_holding(ckpt, dir.path(), "top_losses.csv", "i")) {
    expect_refused("interpret --no-tensorboard" + c + " --out " + folder.string(), file, ckpt);
  }
  for (const auto& [folder, file] : folders_holding(ckpt, dir.path(), "suggestions.csv", "k")) {
    expect_refused("clean" + c + " --out " + folder.string(), file, ckpt);
  }
  for (const auto& [folder, file] : folders_holding(config, dir.path(), "lr_find.csv", "l")) {
    expect_refused("lr-find --config " + config.string() + " --out " + folder.string(), file,
                   config);
  }
  const fs::path plan = dir.path() / "plan.yaml";
  write_file(plan, "name: p\nbase: c.yaml\nruns:\n  - {id: a}\n");
  for (const auto& [folder, file] : folders_holding(plan, dir.path(), "report.md", "x")) {
    expect_refused("experiment --plan " + plan.string() + " --out " + folder.string(), file, plan);
  }
  CHECK_FALSE(fs::exists(dir.path() / "runs/tiny-lr_find"));  // nothing ran
}
