// The ltfit executable end to end: help, exit codes, messages, and a tiny real training run
// whose checkpoint `evaluate` reloads to the same accuracy.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::run_ltfit;

namespace {

// A config for a seconds-long CPU run on a dataset at `root`, writing runs under `out`.
std::string two_epoch_config(const fs::path& root, const fs::path& out) {
  return "run: {name: tiny, out_dir: " + out.string() +
         ", seed: 5}\n"
         "data: {root: " +
         root.string() +
         ", image_size: 32, batch_size: 8, workers: 2}\n"
         "model: {arch: resnet18, pretrained: none, head: linear}\n"
         "train: {recipe: one_cycle, epochs: 2, lr: 2.0e-3, device: cpu}\n"
         "eval: {tta: false}\n";
}

}  // namespace

TEST_CASE("help and version flags work for the program and each command", "[cli]") {
  CHECK(run_ltfit("--version").stdout_text.find("ltfit 0.") == 0);
  for (const char* cmd : {"", "train ", "evaluate ", "synth ", "bench-loader ", "show-batch ",
                          "lr-find ", "export ", "predict "}) {
    INFO(cmd);
    const auto r = run_ltfit(std::string(cmd) + "--help");
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.stdout_text, Contains("Usage"));
  }
  CHECK(run_ltfit("no-such-command").exit_code == 2);
  CHECK(run_ltfit("train").exit_code == 2);  // --config is required
}

TEST_CASE("config mistakes exit 2 naming the file and key", "[cli]") {
  ltfit::testing::TempDir dir;
  const fs::path config = dir.path() / "bad.yaml";
  ltfit::testing::write_file(config, "data:\n  batch_sise: 16\n");
  auto r = run_ltfit("train --config " + config.string());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output,
             Contains("bad.yaml:2") && Contains("data.batch_sise") && Contains("batch_size"));

  r = run_ltfit("train --config " + (dir.path() / "missing.yaml").string());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("missing.yaml"));

  ltfit::testing::write_file(config, "run: {seed: 1}\n");
  r = run_ltfit("train --config " + config.string() + " --set data.batch_size=-4");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("data.batch_size") && Contains("-4"));
  r = run_ltfit("train --config " + config.string() + " --set nonsense");
  CHECK(r.exit_code == 2);
}

TEST_CASE("a missing data root exits 3 and says how to get the data", "[cli]") {
  ltfit::testing::TempDir dir;
  const fs::path config = dir.path() / "c.yaml";
  ltfit::testing::write_file(config, two_epoch_config(dir.path() / "nowhere", dir.path() / "runs"));
  const auto r = run_ltfit("train --config " + config.string());
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.output, Contains("nowhere") && Contains("data/README.md"));
}

TEST_CASE("pretrained weights that cannot be had or read exit 4", "[cli]") {
  ltfit::testing::TempDir dir;
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/data --train 8 --valid 4").exit_code == 0);
  const fs::path config = dir.path() / "c.yaml";
  ltfit::testing::write_file(config, two_epoch_config(dir.path() / "data", dir.path() / "runs"));
  const std::string train = "train --config " + config.string();
  auto r = run_ltfit(train + " --set model.pretrained=" + dir.str() + "/missing.pth");
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output, Contains("model.pretrained") && Contains("missing.pth"));
  ltfit::testing::write_file(dir.path() / "text.pth", "not a weight file");
  r = run_ltfit(train + " --set model.pretrained=" + dir.str() + "/text.pth");
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output, Contains("text.pth"));
  // imagenet, not cached, and the download fails (nothing listens on the base URL's port).
  r = run_ltfit("train --config " + config.string() + " --set model.pretrained=imagenet",
                "TORCH_HOME=" + dir.str() + "/hub LTFIT_WEIGHTS_BASE_URL=http://127.0.0.1:9");
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output, Contains("resnet18-f37072fd.pth"));
  CHECK(run_ltfit("evaluate --checkpoint " + dir.str() + "/none.ckpt").exit_code == 4);
}

TEST_CASE("train writes the run directory and evaluate reproduces its accuracy", "[cli]") {
  ltfit::testing::TempDir dir;
  REQUIRE(
      run_ltfit("synth --out " + dir.str() + "/data --train 32 --valid 16 --seed 3").exit_code ==
      0);
  // An unreadable image is skipped, counted and named; training goes on.
  ltfit::testing::write_file(dir.path() / "data/train/cat/broken.jpg", "this is not a JPEG");
  const fs::path config = dir.path() / "c.yaml";
  ltfit::testing::write_file(config, two_epoch_config(dir.path() / "data", dir.path() / "runs"));

  const auto trained = run_ltfit("train --json --config " + config.string());
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);
  const auto summary = nlohmann::json::parse(trained.stdout_text);
  const fs::path run = dir.path() / "runs/tiny";
  CHECK(summary["run_dir"] == run.string());
  CHECK(summary["epochs"] == 2);
  CHECK(summary["skipped_images"] == 1);
  CHECK(summary["train_images"] == 32);  // the readable ones (before: 33, the files)
  CHECK(summary["train_skipped_images"] == 1);
  CHECK_THAT(trained.output, Contains("broken.jpg"));
  for (const char* file : {"config.yaml", "train.log", "epochs.csv", "steps.csv", "summary.json",
                           "checkpoints/last.ckpt", "checkpoints/best.ckpt"}) {
    INFO(file);
    CHECK(fs::exists(run / file));
  }
  CHECK_THAT(ltfit::testing::read_file(run / "train.log"), Contains("broken.jpg"));
  const std::string epochs = ltfit::testing::read_file(run / "epochs.csv");
  CHECK(epochs.find("epoch,stage,train_loss,valid_loss,accuracy,error_rate,seconds,"
                    "images_per_second,data_wait_seconds,image_size\n") == 0);
  CHECK(std::count(epochs.begin(), epochs.end(), '\n') == 3);
  const std::string steps = ltfit::testing::read_file(run / "steps.csv");
  CHECK(steps.find("step,epoch,lr_0,lr_1,lr_2,momentum,loss,loss_scale\n") == 0);
  // 33 files (one unreadable) make 4 batches an epoch with drop_last; 2 epochs.
  CHECK(std::count(steps.begin(), steps.end(), '\n') == 1 + 2 * 4);

  const auto evaluated =
      run_ltfit("evaluate --json --checkpoint " + (run / "checkpoints/last.ckpt").string());
  INFO(evaluated.output);
  REQUIRE(evaluated.exit_code == 0);
  const auto eval = nlohmann::json::parse(evaluated.stdout_text);
  CHECK(eval["accuracy"].get<double>() == summary["accuracy"].get<double>());
  CHECK(eval["images"] == 16);

  // export: Python's torch.load reads it, and torchvision's ResNet-18 loads it strictly.
  const fs::path pth = dir.path() / "model.pth";
  const auto exported = run_ltfit(
      "export --checkpoint " + (run / "checkpoints/best.ckpt").string() + " --out " + pth.string());
  INFO(exported.output);
  REQUIRE(exported.exit_code == 0);
  const fs::path check = dir.path() / "check.py";
  ltfit::testing::write_file(
      check,
      "import sys, torch\n"
      "sd = torch.load(sys.argv[1], weights_only=True)\n"
      "assert len(sd) == 122 and tuple(sd['fc.weight'].shape) == (2, 512), len(sd)\n"
      "try:\n"
      "    import torchvision\n"
      "except ImportError:\n"
      "    print('OK (torch.load only)'); sys.exit(0)\n"
      "torchvision.models.resnet18(num_classes=2).load_state_dict(sd, strict=True)\n"
      "print('OK')\n");
  int status = std::system(("python3 " + check.string() + " " + pth.string() + " > " +
                            (dir.path() / "check.out").string() + " 2>&1")
                               .c_str());
  INFO(ltfit::testing::read_file(dir.path() / "check.out"));
  CHECK(status == 0);
  CHECK_THAT(ltfit::testing::read_file(dir.path() / "check.out"), Contains("OK"));

  // predict: one JSON line per image, probabilities over the run's classes summing to 1.
  const std::string image = (dir.path() / "data/valid/dog/00000.jpg").string();
  const auto predicted = run_ltfit("predict --json --checkpoint " +
                                   (run / "checkpoints/last.ckpt").string() + " " + image);
  INFO(predicted.output);
  REQUIRE(predicted.exit_code == 0);
  REQUIRE(std::count(predicted.stdout_text.begin(), predicted.stdout_text.end(), '\n') == 1);
  const auto prediction = nlohmann::json::parse(predicted.stdout_text);
  CHECK(prediction["image"] == image);
  double total = 0;
  for (const auto& t : prediction["top"]) total += t["probability"].get<double>();
  CHECK(total == Approx(1.0));
  CHECK(run_ltfit("predict --weights x.pth " + image).exit_code == 2);  // --arch missing

  // A second run never overwrites the first: it gets a numbered sibling.
  const auto again =
      run_ltfit("train --json --config " + config.string() + " --set train.epochs=1");
  REQUIRE(again.exit_code == 0);
  CHECK(nlohmann::json::parse(again.stdout_text)["run_dir"] ==
        (dir.path() / "runs/tiny-2").string());
}

TEST_CASE("a dataset whose every image is unreadable exits 3", "[cli]") {
  ltfit::testing::TempDir dir;
  for (const char* split : {"train", "valid"}) {
    for (const char* cls : {"cat", "dog"}) {
      for (int i = 0; i < 9; ++i) {
        ltfit::testing::write_file(dir.path() / "data" / split / cls / (std::to_string(i) + ".jpg"),
                                   "not an image");
      }
    }
  }
  const fs::path config = dir.path() / "c.yaml";
  ltfit::testing::write_file(config, two_epoch_config(dir.path() / "data", dir.path() / "runs"));
  const auto r = run_ltfit("train --config " + config.string());
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.output, Contains("no training image could be read"));
}

TEST_CASE("bench-loader and show-batch run on a generated set", "[cli]") {
  ltfit::testing::TempDir dir;
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/data --train 16 --valid 4").exit_code == 0);
  const fs::path config = dir.path() / "c.yaml";
  ltfit::testing::write_file(config, two_epoch_config(dir.path() / "data", dir.path() / "runs"));
  const auto bench =
      run_ltfit("bench-loader --json --batches 3 --workers 2 --config " + config.string());
  INFO(bench.output);
  REQUIRE(bench.exit_code == 0);
  const auto result = nlohmann::json::parse(bench.stdout_text);
  CHECK(result["workers"] == 2);
  CHECK(result["images"] == 24);
  CHECK(result["images_per_second"].get<double>() > 0);
  const fs::path png = dir.path() / "batch.png";
  const auto show = run_ltfit("show-batch --config " + config.string() + " --out " + png.string());
  INFO(show.output);
  REQUIRE(show.exit_code == 0);
  CHECK(ltfit::testing::read_file(png).substr(1, 3) == "PNG");
}
