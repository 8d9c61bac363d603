// Configs by name: `--config NAME` finds ./configs/NAME[.yaml] (then the installed configs,
// tests/install/install_test.sh), `ltfit configs` lists what it finds with each file's first
// comment line and prints one by name, a missing name exits 2 listing the names, and a run's
// config.yaml names the file it came from.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::CommandResult;
using ltfit::testing::read_file;
using ltfit::testing::run_ltfit;
using ltfit::testing::TempDir;
using ltfit::testing::write_file;

namespace {

// `ltfit args` with `dir` as the working directory.
CommandResult run_ltfit_in(const fs::path& dir, const std::string& args) {
  return run_ltfit(args, "cd '" + dir.string() + "' &&");
}

// A seconds-long CPU run on the small synthetic set under `dir`/data.
std::string commented_config(const std::string& comment, const std::string& name) {
  return "# " + comment + "\n# a second comment line\n" + "run: {name: " + name +
         ", out_dir: runs, seed: 5, tensorboard: false}\n"
         "data: {root: data, image_size: 32, batch_size: 8, workers: 1}\n"
         "model: {arch: resnet18, pretrained: none, head: linear}\n"
         "train: {recipe: one_cycle, epochs: 1, lr: 2.0e-3, device: cpu}\n"
         "eval: {tta: false}\n";
}

}  // namespace

TEST_CASE("ltfit configs lists the checkout's configs and plans with their first comment line",
          "[cli][configs]") {
  const auto r = run_ltfit_in(ltfit::testing::source_dir(), "configs");
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.stdout_text, Contains("  cats_dogs         The cats-vs-dogs timing study"));
  CHECK_THAT(r.stdout_text, Contains("  quickstart        A quick end-to-end run"));
  CHECK_THAT(r.stdout_text, Contains("configs/quickstart.yaml"));
  CHECK_THAT(r.stdout_text, Contains("  kaggle_vs_colab"));
  CHECK(r.stdout_text.find("study_2019") == std::string::npos);  // figures, not a plan
  CHECK(r.stdout_text.find("study_cifar10_guides") == std::string::npos);

  const auto j = run_ltfit_in(ltfit::testing::source_dir(), "configs --json");
  REQUIRE(j.exit_code == 0);
  const auto doc = nlohmann::json::parse(j.stdout_text);
  std::vector<std::string> names;
  for (const auto& c : doc.at("configs")) names.push_back(c.at("name"));
  CHECK(names ==
        std::vector<std::string>{"cats_dogs", "cats_dogs_modern", "cifar10", "quickstart"});
  REQUIRE(doc.at("plans").size() == 2);
  CHECK(doc.at("plans")[0].at("name") == "cifar10_guides");
  CHECK(doc.at("plans")[1].at("name") == "kaggle_vs_colab");

  const auto printed = run_ltfit_in(ltfit::testing::source_dir(), "configs cats_dogs");
  REQUIRE(printed.exit_code == 0);
  CHECK(printed.stdout_text == read_file(ltfit::testing::source_dir() / "configs/cats_dogs.yaml"));
}

TEST_CASE("a config name finds ./configs/NAME.yaml, logs it and names it in config.yaml",
          "[cli][configs]") {
  TempDir dir;
  ltfit::testing::write_small_synth(dir.path() / "data", 16, 8, 40, 48);
  write_file(dir.path() / "configs/mine.yaml", commented_config("my tiny test config", "by_name"));

  const auto listed = run_ltfit_in(dir.path(), "configs");
  REQUIRE(listed.exit_code == 0);
  CHECK_THAT(listed.stdout_text, Contains("  mine "));
  CHECK_THAT(listed.stdout_text, Contains("my tiny test config"));
  // The build folder's binary also finds its checkout's configs, after ./configs.
  CHECK_THAT(listed.stdout_text,
             Contains((ltfit::testing::source_dir() / "configs/quickstart.yaml").string()));

  const auto r = run_ltfit_in(dir.path(), "train --config mine");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::string resolved = (dir.path() / "configs/mine.yaml").string();
  CHECK_THAT(r.output, Contains("config mine: " + resolved));
  const std::string saved = read_file(dir.path() / "runs/by_name/config.yaml");
  CHECK_THAT(saved, Contains("# from: " + resolved + "\n"));
  CHECK_THAT(saved, Contains("tensorboard: false"));

  // A path that exists wins over a name: ./mine.yaml, not ./configs/mine.yaml.
  write_file(dir.path() / "mine.yaml", commented_config("the working directory's", "by_path"));
  const auto by_path = run_ltfit_in(dir.path(), "train --config mine.yaml");
  INFO(by_path.output);
  REQUIRE(by_path.exit_code == 0);
  CHECK(fs::exists(dir.path() / "runs/by_path/config.yaml"));
  CHECK_THAT(read_file(dir.path() / "runs/by_path/config.yaml"),
             Contains("# from: " + (dir.path() / "mine.yaml").string() + "\n"));
}

TEST_CASE("a config or plan name that matches nothing exits 2 listing the names",
          "[cli][configs]") {
  TempDir dir;
  write_file(dir.path() / "configs/alpha.yaml", "# first\nrun: {name: a}\n");
  write_file(dir.path() / "configs/beta.yaml", "run: {name: b}\n");
  write_file(dir.path() / "configs/experiments/plan_one.yaml",
             "# a plan\nname: p\nbase: alpha.yaml\nruns: []\n");

  for (const char* cmd : {"train --config gamma", "lr-find --config gamma",
                          "show-batch --config gamma --out x.png", "configs gamma"}) {
    INFO(cmd);
    const auto r = run_ltfit_in(dir.path(), cmd);
    CHECK(r.exit_code == 2);
    // `configs gamma` names what the user typed, not a --config flag they never gave.
    const std::string asked = std::string(cmd) == "configs gamma" ? "ltfit configs" : "--config";
    CHECK_THAT(r.output, Contains(asked + " gamma: no such file, and no config of that name in "
                                          "configs/"));
    CHECK_THAT(r.output,
               Contains("(shipped configs: alpha, beta, cats_dogs, cats_dogs_modern, cifar10, "
                        "quickstart)"));
    CHECK_THAT(r.output, Contains("ltfit configs"));
  }
  const auto typo = run_ltfit_in(dir.path(), "configs alpah");  // a did-you-mean for a typo
  CHECK(typo.exit_code == 2);
  CHECK_THAT(typo.output, Contains("did you mean 'alpha'?"));
  const auto plan = run_ltfit_in(dir.path(), "experiment --plan nope");
  CHECK(plan.exit_code == 2);
  CHECK_THAT(plan.output, Contains("(shipped plans: cifar10_guides, kaggle_vs_colab, plan_one)"));

  // An existing folder given as --config is not a config file (exit 2 naming it).
  fs::create_directories(dir.path() / "folder");
  const auto folder = run_ltfit_in(dir.path(), "train --config folder");
  CHECK(folder.exit_code == 2);
  CHECK_THAT(folder.output, Contains("folder"));
}
