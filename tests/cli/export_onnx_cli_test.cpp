// `ltfit export --out FILE.onnx` end to end: a trained fastai-head model (with the weights' moving
// average) and its calibrated copy exported with --preprocess --probabilities, run by ONNX
// Runtime on the decoded pixels of 32x32 PNGs (the eval size, so no resize) against `ltfit
// predict`'s probabilities; --weights model exports other weights than the average; the facts
// in metadata_props; and the refusals: an opset ltfit does not write, an output that is the
// checkpoint, ONNX flags for a .pth, a folder that cannot be written (nothing left behind).
// The ONNX Runtime half is skipped visibly without Python's onnxruntime.
#include <catch2/catch.hpp>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::read_file;
using ltfit::testing::run_bash;
using ltfit::testing::run_ltfit;
using ltfit::testing::write_file;

namespace {

bool python_has_onnxruntime() {
  return std::system("python3 -c 'import onnxruntime, onnx, numpy, PIL' >/dev/null 2>&1") == 0;
}

// A fastai-head ResNet-18 trained one epoch at 32 px with train.ema on; its last.ckpt.
fs::path train_tiny(const ltfit::testing::TempDir& dir) {
  REQUIRE(
      run_ltfit("synth --out " + dir.str() + "/data --train 16 --valid 12 --seed 4").exit_code ==
      0);
  write_file(dir.path() / "c.yaml",
             "run: {name: tiny, out_dir: " + dir.str() +
                 "/runs, seed: 5}\n"
                 "data: {root: " +
                 dir.str() +
                 "/data, image_size: 32, batch_size: 4, workers: 2}\n"
                 "model: {arch: resnet18, pretrained: none, head: fastai}\n"
                 "train: {recipe: one_cycle, epochs: 1, lr: 2.0e-3, device: cpu, "
                 "ema: {decay: 0.5}}\neval: {tta: false}\n");
  const auto trained = run_ltfit("train --config " + dir.str() + "/c.yaml");
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);
  return dir.path() / "runs/tiny/checkpoints/last.ckpt";
}

// Three 32x32 RGB PNGs of noise.
std::string write_pngs(const ltfit::testing::TempDir& dir) {
  std::string paths;
  for (int i = 0; i < 3; ++i) {
    const fs::path path = dir.path() / ("p" + std::to_string(i) + ".png");
    REQUIRE(ltfit::testing::write_noise_png(path, 32, 7 + i));
    paths += " " + path.string();
  }
  return paths;
}

// ONNX Runtime's probabilities on the PNGs' decoded RGB pixels, as predict's JSON, and the
// model's metadata: two lines of JSON.
std::string run_onnxruntime(const ltfit::testing::TempDir& dir, const fs::path& model,
                            const std::string& pngs) {
  return run_bash(
      dir.path(),
      "python3 - " + model.string() + pngs +
          " <<'PY'\n"
          "import json, sys, numpy as np, onnx, onnxruntime as ort\n"
          "from PIL import Image\n"
          "onnx.checker.check_model(sys.argv[1], full_check=True)\n"
          "s = ort.InferenceSession(sys.argv[1], providers=['CPUExecutionProvider'])\n"
          "meta = s.get_modelmeta().custom_metadata_map\n"
          "classes = json.loads(meta['classes'])\n"
          "x = np.stack([np.asarray(Image.open(p).convert('RGB')) for p in sys.argv[2:]])\n"
          "logits, probs = s.run(None, {'image': x})\n"
          "print(json.dumps({p: dict(zip(classes, map(float, r)))\n"
          "                  for p, r in zip(sys.argv[2:], probs)}))\n"
          "print(json.dumps(meta))\n"
          "PY\n");
}

void check_same_probabilities(const std::map<std::string, std::map<std::string, double>>& ours,
                              const nlohmann::json& theirs) {
  REQUIRE(ours.size() == 3);
  for (const auto& [image, classes] : ours) {
    INFO(image);
    REQUIRE(classes.size() == 2);
    for (const auto& [name, p] : classes)
      CHECK(theirs[image][name].get<double>() == Approx(p).margin(1e-5));
  }
}

}  // namespace

TEST_CASE("export .onnx: ONNX Runtime on the pixels gives predict's probabilities, calibrated too",
          "[cli][onnx]") {
  ltfit::testing::TempDir dir;
  const fs::path ckpt = train_tiny(dir);
  const std::string pngs = write_pngs(dir);
  const fs::path onnx_path = dir.path() / "m.onnx";
  const auto exported = run_ltfit("export --checkpoint " + ckpt.string() + " --out " +
                                  onnx_path.string() + " --preprocess --probabilities");
  INFO(exported.output);
  REQUIRE(exported.exit_code == 0);
  CHECK_THAT(exported.output, Contains("opset 17") && Contains("moving average"));
  REQUIRE(fs::exists(onnx_path));
  if (!python_has_onnxruntime()) {
    WARN("SKIPPED (ONNX Runtime half): Python's onnxruntime, onnx, numpy or PIL is missing");
    return;
  }
  const auto ours = ltfit::testing::top_probabilities(
      run_ltfit("predict --json --top 2 --checkpoint " + ckpt.string() + pngs).stdout_text);
  std::istringstream lines(run_onnxruntime(dir, onnx_path, pngs));
  std::string probs_line, meta_line;
  std::getline(lines, probs_line);
  std::getline(lines, meta_line);
  INFO(probs_line << "\n" << meta_line);
  check_same_probabilities(ours, nlohmann::json::parse(probs_line));
  const auto meta = nlohmann::json::parse(meta_line);
  CHECK(meta["arch"] == "resnet18");
  CHECK(meta["head"] == "fastai");
  CHECK(meta["task"] == "single_label");
  CHECK(meta["classes"] == "[\"cat\",\"dog\"]");
  CHECK(meta["image_size"] == "32");
  CHECK(meta["temperature"] == "1");
  CHECK(meta["weights"] == "ema");
  CHECK(meta["source_checkpoint_sha256"].get<std::string>().size() == 64);
  CHECK_THAT(meta["ltfit"].get<std::string>(), Contains("\"format\": \"ltfit-export\""));

  // A calibrated copy exports its temperature; ONNX Runtime then gives its predict's figures.
  REQUIRE(run_ltfit("calibrate --device cpu --checkpoint " + ckpt.string()).exit_code == 0);
  const fs::path calibrated = ckpt.parent_path() / "last-calibrated.ckpt";
  const fs::path cal_onnx = dir.path() / "calibrated.onnx";
  REQUIRE(run_ltfit("export --checkpoint " + calibrated.string() + " --out " + cal_onnx.string() +
                    " --preprocess --probabilities")
              .exit_code == 0);
  const auto cal_ours = ltfit::testing::top_probabilities(
      run_ltfit("predict --json --top 2 --checkpoint " + calibrated.string() + pngs).stdout_text);
  std::istringstream cal_lines(run_onnxruntime(dir, cal_onnx, pngs));
  std::getline(cal_lines, probs_line);
  std::getline(cal_lines, meta_line);
  INFO(probs_line << "\n" << meta_line);
  check_same_probabilities(cal_ours, nlohmann::json::parse(probs_line));
  CHECK(nlohmann::json::parse(meta_line)["temperature"] != "1");

  // --weights model: the trained weights, not the average: other logits.
  const fs::path trained = dir.path() / "trained.onnx";
  REQUIRE(run_ltfit("export --weights model --checkpoint " + ckpt.string() + " --out " +
                    trained.string() + " --preprocess --probabilities")
              .exit_code == 0);
  std::istringstream trained_lines(run_onnxruntime(dir, trained, pngs));
  std::getline(trained_lines, probs_line);
  std::getline(trained_lines, meta_line);
  CHECK(nlohmann::json::parse(meta_line)["weights"] == "model");
  CHECK(nlohmann::json::parse(probs_line) != nlohmann::json(nullptr));
  CHECK(read_file(trained) != read_file(onnx_path));
}

TEST_CASE("export .onnx refuses what it cannot write, with exit codes, leaving nothing behind",
          "[cli][onnx]") {
  ltfit::testing::TempDir dir;
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/data --train 8 --valid 4 --seed 1").exit_code ==
          0);
  const auto trained = run_ltfit(
      "train --config quickstart --set data.root=" + dir.str() +
      "/data --set data.image_size=32 --set model.arch=resnet18 --set model.pretrained=none "
      "--set train.device=cpu --set data.workers=1 --set train.epochs=1 --set "
      "train.recipe=one_cycle --set data.batch_size=4 --set eval.tta=false --run-dir " +
      dir.str() + "/run");
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);
  const std::string ckpt = dir.str() + "/run/checkpoints/last.ckpt";
  const std::string before = read_file(ckpt);

  const auto opset =
      run_ltfit("export --checkpoint " + ckpt + " --out " + dir.str() + "/a.onnx --opset 16");
  CHECK(opset.exit_code == 2);
  CHECK_THAT(opset.output, Contains("--opset 16") && Contains("17 to 21"));
  const auto itself = run_ltfit("export --checkpoint " + ckpt + " --format onnx --out " + ckpt);
  CHECK(itself.exit_code == 2);
  CHECK(read_file(ckpt) == before);
  const auto pth =
      run_ltfit("export --checkpoint " + ckpt + " --out " + dir.str() + "/a.pth --probabilities");
  CHECK(pth.exit_code == 2);
  CHECK_THAT(pth.output, Contains("are for ONNX exports"));
  const auto format =
      run_ltfit("export --checkpoint " + ckpt + " --out " + dir.str() + "/a.x --format tflite");
  CHECK(format.exit_code == 2);
  write_file(dir.path() / "file", "x");
  const auto unwritable =
      run_ltfit("export --checkpoint " + ckpt + " --out " + dir.str() + "/file/a.onnx");
  CHECK(unwritable.exit_code == 5);
  CHECK_FALSE(fs::exists(dir.path() / "a.onnx"));
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    CHECK(entry.path().extension() != ".tmp");
  }
}
