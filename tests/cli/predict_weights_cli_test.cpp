// `ltfit predict --weights` uses a weight file as it is: an `ltfit export` of a 2-class
// checkpoint predicts its own two classes with their names (from FILE.json), exactly as
// `predict --checkpoint` does, and with class_0/class_1 once the description is gone; never a
// fresh 1000-class classifier. A file whose keys fit neither head is refused (exit 4), and so is
// --checkpoint together with --weights (exit 2).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <sstream>

#include "jobs/jobs_fixtures.h"
#include "ltfit/formats/safetensors.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/model/torch_weights.h"
#include "support/child_cap.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::CommandResult;
using ltfit::testing::TempDir;

namespace {

CommandResult predict_weights_cmd(const std::string& args) {
  return ltfit::testing::run_ltfit("predict " + args, ltfit::testing::child_address_space_cap());
}

std::vector<nlohmann::json> json_lines_of(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

// A checkpoint of a resnet18 with fastai's head for cat and dog (32 px) exported to
// `dir`/model.pth; images under `dir`/photos. Returns the checkpoint's path.
std::string export_fastai_checkpoint(const TempDir& dir) {
  const fs::path ckpt = dir.path() / "run/checkpoints/last.ckpt";
  std::string config = ltfit::testing::tiny_job_config(dir.path() / "data", dir.path() / "runs");
  const std::string linear = "head: linear";
  config.replace(config.find(linear), linear.size(), "head: fastai");
  ltfit::testing::write_job_checkpoint(ckpt, config);
  ltfit::testing::write_small_synth(dir.path() / "photos", 2, 4, 40, 60, 3);
  const auto r = ltfit::testing::run_ltfit("export --checkpoint " + ckpt.string() + " --out " +
                                           dir.str() + "/model.pth");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return ckpt.string();
}

}  // namespace

TEST_CASE("predict --weights of an export: its own head and class names, as --checkpoint",
          "[cli][predict]") {
  TempDir dir;
  const std::string ckpt = export_fastai_checkpoint(dir);
  const std::string pth = dir.str() + "/model.pth", photos = dir.str() + "/photos/valid";
  REQUIRE(fs::exists(dir.path() / "model.json"));

  const auto by_checkpoint =
      predict_weights_cmd("--json --logits --checkpoint " + ckpt + " " + photos);
  REQUIRE(by_checkpoint.exit_code == 0);
  const auto by_weights =
      predict_weights_cmd("--json --logits --weights " + pth + " " + photos);  // no --arch
  INFO(by_weights.output);
  REQUIRE(by_weights.exit_code == 0);
  CHECK_THAT(by_weights.output,
             Contains("resnet18 with a fastai head for 2 classes") && !Contains("replaced"));
  const auto expected = json_lines_of(by_checkpoint.stdout_text);
  const auto lines = json_lines_of(by_weights.stdout_text);
  REQUIRE(lines.size() == 4);
  REQUIRE(expected.size() == lines.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    INFO(lines[i].dump());
    REQUIRE(lines[i]["top"].size() == 2);
    CHECK(lines[i]["top"][0]["class"] == expected[i]["top"][0]["class"]);
    const auto logits = lines[i]["logits"].get<std::vector<float>>();
    const auto reference = expected[i]["logits"].get<std::vector<float>>();
    REQUIRE(logits.size() == 2);
    for (std::size_t k = 0; k < 2; ++k) CHECK(logits[k] == Approx(reference[k]).margin(1e-5));
  }
  // The description names the arch: another --arch is a usage error.
  auto r = predict_weights_cmd("--weights " + pth + " --arch resnet34 " + photos);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("says the weights are resnet18's"));

  // Without its description: still its own 2 classes, named by number; --arch needed.
  fs::remove(dir.path() / "model.json");
  CHECK(predict_weights_cmd("--weights " + pth + " " + photos).exit_code == 2);
  r = predict_weights_cmd("--json --weights " + pth + " --arch resnet18 " + photos);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  for (const auto& j : json_lines_of(r.stdout_text)) {
    REQUIRE(j["top"].size() == 2);
    CHECK(j["top"][0]["class"] == "class_" + std::to_string(j["top"][0]["label"].get<int>()));
  }
  CHECK_THAT(r.output, Contains("names no classes"));
}

TEST_CASE("predict --weights refuses weights that fit neither head, and --checkpoint with it",
          "[cli][predict]") {
  TempDir dir;
  const std::string ckpt = export_fastai_checkpoint(dir);
  const std::string photos = dir.str() + "/photos/valid";
  // A resnet18 body without any classifier.
  ltfit::Classifier model = ltfit::make_classifier("resnet18", 3);
  ltfit::StateDict body;
  for (auto& [name, tensor] : ltfit::testing::state_dict_of(model)) {
    if (name.rfind("fc.", 0) != 0) body.emplace_back(name, tensor);
  }
  ltfit::write_torch_state_dict(dir.str() + "/body.pth", body);
  auto r = predict_weights_cmd("--weights " + dir.str() + "/body.pth --arch resnet18 " + photos);
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output, Contains("holds neither fastai's head (head.6.weight) nor resnet18's "
                                "torchvision classifier (fc.*)") &&
                           Contains("'conv1.weight'"));
  // The export's tensors are not a resnet34's: refused, naming the keys.
  r = predict_weights_cmd("--weights " + dir.str() + "/model.pth " + photos + " --arch resnet34");
  CHECK(r.exit_code == 2);  // its description names resnet18
  fs::remove(dir.path() / "model.json");
  r = predict_weights_cmd("--weights " + dir.str() + "/model.pth --arch resnet34 " + photos);
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output, Contains("does not fit a resnet34 with a fastai head"));

  r = predict_weights_cmd("--checkpoint " + ckpt + " --weights " + dir.str() + "/model.pth " +
                          photos);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("--checkpoint or --weights, not both"));
  CHECK(predict_weights_cmd("--checkpoint " + ckpt + " --arch resnet18 " + photos).exit_code == 2);
}

// FILE.json's eval_transform was trusted: crop 4000 under resize 16 made 4000-px images (3.7 GB,
// 25 s, a wrong answer, exit 0), crop 12000 asked for 9.2 GB, 0, -5 and 1e20 ended in "internal
// error" (exit 5). Each field is range-checked now: exit 4, naming the field and the file.
TEST_CASE("predict --weights range-checks FILE.json's eval_transform: exit 4 naming the field",
          "[cli][predict]") {
  TempDir dir;
  export_fastai_checkpoint(dir);
  const std::string pth = dir.str() + "/model.pth", photos = dir.str() + "/photos/valid";
  const fs::path sidecar = dir.path() / "model.json";
  const nlohmann::json original = nlohmann::json::parse(ltfit::testing::read_file(sidecar));
  const auto with_transform = [&](const nlohmann::json& transform) {
    nlohmann::json meta = original;
    meta["eval_transform"] = transform;
    ltfit::testing::write_file(sidecar, meta.dump());
  };
  const nlohmann::json bilinear = "bilinear";
  const std::vector<std::pair<nlohmann::json, std::string>> bad = {
      {{{"resize", 16}, {"crop", 4000}, {"interpolation", bilinear}}, "eval_transform.crop (4000)"},
      {{{"resize", 12000}, {"crop", 12000}, {"interpolation", bilinear}}, "eval_transform.crop"},
      {{{"resize", 32}, {"crop", 0}, {"interpolation", bilinear}}, "eval_transform.crop"},
      {{{"resize", 32}, {"crop", -5}, {"interpolation", bilinear}}, "eval_transform.crop"},
      {{{"resize", 32}, {"crop", 1e20}, {"interpolation", bilinear}}, "eval_transform.crop"},
      {{{"resize", 32}, {"crop", "32"}, {"interpolation", bilinear}}, "eval_transform.crop"},
      {{{"resize", 5000}, {"crop", 32}, {"interpolation", bilinear}}, "eval_transform.resize"},
      {{{"resize", -1}, {"crop", 32}, {"interpolation", bilinear}}, "eval_transform.resize"},
      {{{"resize", 32}, {"crop", 32}, {"interpolation", "nearest"}},
       "eval_transform.interpolation"},
  };
  for (const auto& [transform, field] : bad) {
    with_transform(transform);
    const auto r = predict_weights_cmd("--weights " + pth + " " + photos);
    INFO(transform.dump() << "\n" << r.output);
    CHECK(r.exit_code == 4);
    CHECK_THAT(r.output, Contains(field) && Contains(sidecar.string()) && !Contains("internal"));
  }
  // A valid one still predicts: ltfit's own (resize = crop), and torchvision's Resize + CenterCrop.
  for (const int resize : {32, 40}) {
    with_transform({{"resize", resize}, {"crop", 32}, {"interpolation", "bicubic"}});
    const auto r = predict_weights_cmd("--json --weights " + pth + " " + photos);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(json_lines_of(r.stdout_text).size() == 4);
  }
}

TEST_CASE("export .safetensors: predict --weights gives --checkpoint's logits, bad files exit 4",
          "[cli][predict][safetensors]") {
  TempDir dir;
  const std::string ckpt = export_fastai_checkpoint(dir);
  const std::string file = dir.str() + "/model.safetensors", photos = dir.str() + "/photos/valid";
  auto r = ltfit::testing::run_ltfit("export --checkpoint " + ckpt + " --out " + file);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // The same tensors as the .pth export, and the description both beside it and inside it.
  const ltfit::StateDict pth = ltfit::read_torch_state_dict(dir.str() + "/model.pth");
  const ltfit::StateDict safe = ltfit::read_weights_file(file);
  REQUIRE(safe.size() == pth.size());
  for (std::size_t i = 0; i < pth.size(); ++i) {
    INFO(pth[i].first);
    CHECK(safe[i].first == pth[i].first);
    CHECK(torch::equal(safe[i].second, pth[i].second));
  }
  const std::string bytes = ltfit::testing::read_file(file);
  const auto content = ltfit::read_safetensors(bytes);
  CHECK(content.metadata.at("format") == "pt");
  CHECK(nlohmann::json::parse(content.metadata.at("ltfit"))["arch"] == "resnet18");
  REQUIRE(fs::exists(dir.path() / "model.json"));

  const auto by_checkpoint =
      predict_weights_cmd("--json --logits --checkpoint " + ckpt + " " + photos);
  r = predict_weights_cmd("--json --logits --weights " + file + " " + photos);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto expected = json_lines_of(by_checkpoint.stdout_text);
  const auto lines = json_lines_of(r.stdout_text);
  REQUIRE(lines.size() == expected.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto logits = lines[i]["logits"].get<std::vector<float>>();
    const auto reference = expected[i]["logits"].get<std::vector<float>>();
    for (std::size_t k = 0; k < logits.size(); ++k) {
      CHECK(logits[k] == Approx(reference[k]).margin(1e-5));
    }
  }
  // Half precision weights (as timm's files often are) load too, converted where they are copied.
  ltfit::StateDict half;
  for (const auto& [name, tensor] : safe) {
    half.emplace_back(name, tensor.is_floating_point() ? tensor.to(torch::kBFloat16) : tensor);
  }
  ltfit::testing::write_file(dir.path() / "half.safetensors", ltfit::safetensors_bytes(half));
  r = predict_weights_cmd("--json --weights " + dir.str() + "/half.safetensors --arch resnet18 " +
                          photos);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  // Truncated: exit 4, naming the file and what is wrong.
  ltfit::testing::write_file(dir.path() / "cut.safetensors", bytes.substr(0, bytes.size() / 2));
  r = predict_weights_cmd("--weights " + dir.str() + "/cut.safetensors --arch resnet18 " + photos);
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output, Contains("cut.safetensors' (safetensors)") && Contains("truncated"));
  // Neither format.
  ltfit::testing::write_file(dir.path() / "text.safetensors", "hello, not weights");
  r = predict_weights_cmd("--weights " + dir.str() + "/text.safetensors --arch resnet18 " + photos);
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output, Contains("text.safetensors"));
}

TEST_CASE("predict --weights of a timm snapshot: timm's eval transform and normalization",
          "[cli][predict][timm]") {
  TempDir dir;
  ltfit::testing::write_small_synth(dir.path() / "photos", 2, 4, 40, 60, 3);
  const std::string photos = dir.str() + "/photos/valid";
  torch::manual_seed(4);
  ltfit::Classifier model = ltfit::make_classifier("resnet18", 3, ltfit::HeadKind::kLinear);
  ltfit::StateDict state;
  for (const auto& item : model->named_parameters()) state.emplace_back(item.key(), item.value());
  for (const auto& item : model->named_buffers()) state.emplace_back(item.key(), item.value());
  const fs::path snapshot = dir.path() / "models--timm--resnet18.x/snapshots/abc";
  ltfit::testing::write_file(snapshot / "model.safetensors", ltfit::safetensors_bytes(state));
  const std::string weights = (snapshot / "model.safetensors").string();
  const auto plain =
      predict_weights_cmd("--json --logits --weights " + weights + " --arch resnet18 " + photos);
  INFO(plain.output);
  REQUIRE(plain.exit_code == 0);
  ltfit::testing::write_file(snapshot / "config.json",
                             nlohmann::json{{"architecture", "resnet18"},
                                            {"pretrained_cfg",
                                             {{"mean", {0.5, 0.5, 0.5}},
                                              {"std", {0.5, 0.5, 0.5}},
                                              {"input_size", {3, 48, 48}},
                                              {"crop_pct", 0.75},
                                              {"interpolation", "bicubic"}}}}
                                 .dump());
  const auto timm =
      predict_weights_cmd("--json --logits --weights " + weights + " --arch resnet18 " + photos);
  INFO(timm.output);
  REQUIRE(timm.exit_code == 0);
  CHECK_THAT(timm.output,
             Contains("timm's eval transform and normalization from the config.json") &&
                 Contains("(resize 64, crop 48)"));
  const auto a = json_lines_of(plain.stdout_text), b = json_lines_of(timm.stdout_text);
  REQUIRE(a.size() == b.size());
  CHECK(a[0]["logits"] != b[0]["logits"]);
  // Another architecture's config.json: refused, naming both (exit 2).
  ltfit::testing::write_file(
      snapshot / "config.json",
      nlohmann::json{{"architecture", "resnet50"}, {"pretrained_cfg", nlohmann::json::object()}}
          .dump());
  const auto other = predict_weights_cmd("--weights " + weights + " --arch resnet18 " + photos);
  CHECK(other.exit_code == 2);
  CHECK_THAT(other.output, Contains("'resnet50'"));
}
