// Every family end to end through the executable: `ltfit models` lists the registry, a misspelt
// arch exits 2 with a "did you mean", and a ConvNeXt and an EfficientNet train, checkpoint,
// export a file torchvision loads strictly (Python oracle, skipped by name without
// torchvision), load that file back as `model.pretrained` under a fastai head, and predict from
// the checkpoint and from the file (`--weights --arch`); a ViT (a token body), a Swin and a
// MobileNetV3 train with fastai's head, export ONNX, and predict with a Grad-CAM picture.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::run_ltfit;

namespace {

std::string family_config(const fs::path& root, const fs::path& out, const std::string& arch,
                          const std::string& model_extra) {
  return "run: {name: " + arch + ", out_dir: " + out.string() + ", seed: 5}\n" +
         "data: {root: " + root.string() + ", image_size: 32, batch_size: 8, workers: 2}\n" +
         "model: {arch: " + arch + ", " + model_extra + "}\n" +
         "train: {recipe: fine_tune, freeze_epochs: 1, epochs: 1, lr: 2.0e-3, device: cpu}\n" +
         "eval: {tta: false}\n";
}

// Runs `script` with python3 on `arg`; returns its output, "" if it failed.
std::string run_python(const fs::path& dir, const std::string& script, const std::string& arg) {
  const fs::path file = dir / "check.py", out = dir / "check.out";
  ltfit::testing::write_file(file, script);
  const int status = std::system(
      ("python3 " + file.string() + " " + arg + " > " + out.string() + " 2>&1").c_str());
  const std::string text = ltfit::testing::read_file(out);
  INFO(text);
  CHECK(status == 0);
  return status == 0 ? text : "";
}

}  // namespace

TEST_CASE("ltfit models lists every registered arch, and a misspelt arch exits 2", "[cli]") {
  const auto table = run_ltfit("models");
  REQUIRE(table.exit_code == 0);
  for (const char* arch : {"resnet34", "resnext50_32x4d", "wide_resnet50_2", "convnext_tiny",
                           "convnext_small", "efficientnet_b0", "efficientnet_b3"}) {
    CHECK_THAT(table.stdout_text, Contains(std::string("| ") + arch + " |"));
  }
  const auto json = run_ltfit("models --json");
  REQUIRE(json.exit_code == 0);
  const auto rows = nlohmann::json::parse(json.stdout_text);
  REQUIRE(rows.size() >= 13);
  CHECK(rows[0]["arch"] == "resnet18");
  CHECK(rows[0]["parameters"] == 11689512);

  ltfit::testing::TempDir dir;
  const fs::path config = dir.path() / "c.yaml";
  ltfit::testing::write_file(config, family_config(dir.path() / "data", dir.path() / "runs",
                                                   "convnext_tiy", "pretrained: none"));
  const auto r = run_ltfit("train --config " + config.string());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("model.arch") && Contains("did you mean 'convnext_tiny'"));
}

TEST_CASE("ConvNeXt and EfficientNet train, export for torchvision, reload and predict", "[cli]") {
  ltfit::testing::TempDir dir;
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/data --train 16 --valid 8 --seed 3").exit_code ==
          0);
  const std::string arch = GENERATE(as<std::string>{}, "convnext_tiny", "efficientnet_b0");
  INFO(arch);
  const fs::path config = dir.path() / (arch + ".yaml");
  ltfit::testing::write_file(config, family_config(dir.path() / "data", dir.path() / "runs", arch,
                                                   "pretrained: none, head: linear"));
  const auto trained = run_ltfit("train --json --config " + config.string());
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);
  const fs::path run = nlohmann::json::parse(trained.stdout_text)["run_dir"].get<std::string>();
  const fs::path ckpt = run / "checkpoints" / "last.ckpt";
  REQUIRE(fs::exists(ckpt));

  // export: torchvision's model of the same arch (2 classes) loads the file strictly.
  const fs::path pth = dir.path() / (arch + ".pth");
  const auto exported =
      run_ltfit("export --checkpoint " + ckpt.string() + " --out " + pth.string());
  INFO(exported.output);
  REQUIRE(exported.exit_code == 0);
  const std::string checked =
      run_python(dir.path(),
                 "import sys, torch\n"
                 "sd = torch.load(sys.argv[1], weights_only=True)\n"
                 "try:\n"
                 "    import torchvision\n"
                 "except ImportError:\n"
                 "    print('OK (torch.load only:', len(sd), 'tensors)'); sys.exit(0)\n"
                 "getattr(torchvision.models, '" +
                     arch +
                     "')(num_classes=2).load_state_dict(sd, strict=True)\n"
                     "print('OK')\n",
                 pth.string());
  CHECK_THAT(checked, Contains("OK"));

  // The exported file as model.pretrained under a fastai head: the body loads, the classifier is
  // replaced (said in the log).
  const fs::path again = dir.path() / (arch + "-pretrained.yaml");
  ltfit::testing::write_file(again,
                             family_config(dir.path() / "data", dir.path() / "runs2", arch,
                                           "pretrained: " + pth.string() + ", head: fastai"));
  const auto fine_tuned = run_ltfit("train --json --config " + again.string());
  INFO(fine_tuned.output);
  REQUIRE(fine_tuned.exit_code == 0);
  CHECK_THAT(fine_tuned.output, Contains("classifier.") && Contains("replaced by the new head"));
  const fs::path run2 = nlohmann::json::parse(fine_tuned.stdout_text)["run_dir"].get<std::string>();

  const std::string image = (dir.path() / "data/valid/dog/00000.jpg").string();
  const auto predicted = run_ltfit("predict --json --checkpoint " +
                                   (run2 / "checkpoints/last.ckpt").string() + " " + image);
  INFO(predicted.output);
  REQUIRE(predicted.exit_code == 0);
  const auto prediction = nlohmann::json::parse(predicted.stdout_text);
  REQUIRE(prediction.contains("top"));
  double total = 0;
  for (const auto& t : prediction["top"]) total += t["probability"].get<double>();
  CHECK(total == Approx(1.0));

  // predict --weights FILE --arch A uses the file as it is: its own 2-class classifier, named by
  // the FILE.json export wrote beside it (it never puts a fresh 1000-class classifier there).
  const auto own = run_ltfit("predict --json --top 3 --weights " + pth.string() + " --arch " +
                             arch + " " + image);
  INFO(own.output);
  REQUIRE(own.exit_code == 0);
  const auto own_top = nlohmann::json::parse(own.stdout_text)["top"];
  REQUIRE(own_top.size() == 2);  // --top 3 of a 2-class model
  std::vector<std::string> names;
  for (const auto& t : own_top) names.push_back(t["class"].get<std::string>());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"cat", "dog"});
  // An --arch that contradicts the file's description is a usage error; without the description,
  // another arch's file is refused by name and shape.
  CHECK(run_ltfit("predict --weights " + pth.string() + " --arch resnet18 " + image).exit_code ==
        2);
  fs::path sidecar = pth;
  fs::remove(sidecar.replace_extension(".json"));
  CHECK(run_ltfit("predict --weights " + pth.string() + " --arch resnet18 " + image).exit_code ==
        4);
}

TEST_CASE("ViT, Swin and MobileNetV3 train, export ONNX and predict with Grad-CAM", "[cli]") {
  ltfit::testing::TempDir dir;
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/data --train 8 --valid 4 --seed 4").exit_code ==
          0);
  const std::string arch = GENERATE(as<std::string>{}, "vit_b_16", "swin_t", "mobilenet_v3_small");
  INFO(arch);
  const fs::path config = dir.path() / (arch + ".yaml");
  ltfit::testing::write_file(config, family_config(dir.path() / "data", dir.path() / "runs", arch,
                                                   "pretrained: none, head: fastai"));
  const auto trained = run_ltfit("train --json --config " + config.string());
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);
  const fs::path run = nlohmann::json::parse(trained.stdout_text)["run_dir"].get<std::string>();
  const fs::path ckpt = run / "checkpoints" / "last.ckpt";
  REQUIRE(fs::exists(ckpt));

  const fs::path onnx = dir.path() / (arch + ".onnx");
  const auto exported = run_ltfit("export --checkpoint " + ckpt.string() + " --out " +
                                  onnx.string() + " --format onnx");
  INFO(exported.output);
  REQUIRE(exported.exit_code == 0);
  CHECK(fs::file_size(onnx) > 100'000);

  const fs::path cams = dir.path() / (arch + "-cams");
  const std::string image = (dir.path() / "data/valid/cat/00000.jpg").string();
  const auto predicted = run_ltfit("predict --json --cam " + cams.string() + " --checkpoint " +
                                   ckpt.string() + " " + image);
  INFO(predicted.output);
  REQUIRE(predicted.exit_code == 0);
  const auto prediction = nlohmann::json::parse(predicted.stdout_text);
  double total = 0;
  for (const auto& t : prediction["top"]) total += t["probability"].get<double>();
  CHECK(total == Approx(1.0));
  REQUIRE(prediction.contains("cam"));
  CHECK(fs::exists(prediction["cam"].get<std::string>()));
}
