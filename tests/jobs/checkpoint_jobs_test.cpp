// export and predict read checkpoints through load_model_for_eval, the one checkpoint -> model
// path: the exported state dict and the predicted logits are those of the saved model.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <map>

#include "jobs/jobs_fixtures.h"
#include "ltfit/data/image_io.h"
#include "ltfit/data/loader.h"
#include "ltfit/jobs/export_job.h"
#include "ltfit/jobs/export_meta.h"
#include "ltfit/jobs/predict_job.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/model/torch_weights.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace {

namespace fs = std::filesystem;
using ltfit::testing::TempDir;

}  // namespace

TEST_CASE("export_job writes the checkpoint's weights, every parameter and buffer", "[jobs]") {
  TempDir dir;
  const fs::path ckpt = dir.path() / "run/checkpoints/last.ckpt";
  ltfit::Classifier saved = ltfit::testing::write_job_checkpoint(
      ckpt, ltfit::testing::tiny_job_config(dir.path() / "data", dir.path() / "runs"));
  const fs::path out = dir.path() / "model.pth";
  ltfit::run_export_job({ckpt.string(), out.string()});

  std::map<std::string, torch::Tensor> expected;
  for (const auto& p : saved->named_parameters()) expected[p.key()] = p.value();
  for (const auto& b : saved->named_buffers()) expected[b.key()] = b.value();
  const ltfit::StateDict state = ltfit::read_torch_state_dict(out.string());
  CHECK(state.size() == expected.size());
  for (const auto& [name, tensor] : state) {
    INFO(name);
    REQUIRE(expected.count(name) == 1);
    CHECK(torch::equal(tensor, expected[name]));
  }
  CHECK_THROWS_AS(ltfit::run_export_job({(dir.path() / "missing.ckpt").string(), out.string()}),
                  ltfit::CheckpointError);
}

TEST_CASE("export_job describes the weights in FILE.json: arch, head, classes, transform",
          "[jobs]") {
  TempDir dir;
  const fs::path ckpt = dir.path() / "run/checkpoints/last.ckpt";
  ltfit::testing::write_job_checkpoint(
      ckpt, ltfit::testing::tiny_job_config(dir.path() / "data", dir.path() / "runs"));
  const fs::path out = dir.path() / "model.pth";
  ltfit::run_export_job({ckpt.string(), out.string()});
  CHECK(ltfit::export_meta_path(out.string()) == (dir.path() / "model.json").string());
  CHECK(ltfit::export_meta_path("w.bin") == "w.bin.json");
  const std::optional<ltfit::ExportMeta> meta = ltfit::read_export_meta(out.string());
  REQUIRE(meta);
  CHECK(meta->arch == "resnet18");
  CHECK(meta->head == "linear");
  CHECK(meta->classes == std::vector<std::string>{"cat", "dog"});
  CHECK(meta->feature_channels == 512);
  CHECK(meta->image_size == 32);
  CHECK(meta->normalization == ltfit::ImageNormalization{});
  CHECK_FALSE(ltfit::read_export_meta((dir.path() / "other.pth").string()));  // none beside it
  // Another format's file of that name is not ours: ignored (the next test case has the rest).
  ltfit::testing::write_file(dir.path() / "bad.json", "{\"format\": \"something else\"}");
  CHECK_FALSE(ltfit::read_export_meta((dir.path() / "bad.pth").string()));
}

TEST_CASE("predict_job: the checkpoint's model, images in order, unreadable ones named", "[jobs]") {
  TempDir dir;
  const fs::path ckpt = dir.path() / "run/checkpoints/last.ckpt";
  ltfit::Classifier saved = ltfit::testing::write_job_checkpoint(
      ckpt, ltfit::testing::tiny_job_config(dir.path() / "data", dir.path() / "runs"));
  const auto samples = ltfit::testing::write_small_synth(dir.path() / "data", 4, 2, 40, 60, 3);
  ltfit::testing::write_file(dir.path() / "broken.jpg", "not an image");
  ltfit::PredictRequest request;
  request.checkpoint = ckpt.string();
  request.images = {samples[0].path, (dir.path() / "broken.jpg").string(), samples[1].path};
  request.top = 2;
  request.logits = true;
  request.batch_size = 1;  // each image forwarded alone, as the reference below (bit for bit)
  const std::vector<ltfit::ImagePrediction> results = ltfit::run_predict_job(request);
  // predict runs the saved model with its BatchNorms folded (prepare_for_inference); the same
  // fold here, and the unfolded model beside it.
  ltfit::Classifier unfolded = ltfit::make_classifier("resnet18", 2);
  {
    torch::NoGradGuard no_grad;
    auto params = unfolded->named_parameters();
    for (const auto& p : saved->named_parameters()) params[p.key()].copy_(p.value());
    auto buffers = unfolded->named_buffers();
    for (const auto& b : saved->named_buffers()) buffers[b.key()].copy_(b.value());
  }
  unfolded->eval();
  saved->eval();
  CHECK(saved->fold_batch_norms() == 20);  // bn1, 2 per block, 3 downsamples

  REQUIRE(results.size() == 3);
  CHECK(results[1].image == request.images[1]);
  CHECK(results[1].error);
  CHECK(results[1].top.empty());
  for (const std::size_t i : {std::size_t{0}, std::size_t{2}}) {
    const ltfit::ImagePrediction& p = results[i];
    INFO(p.image);
    CHECK(p.image == request.images[i]);
    REQUIRE_FALSE(p.error);
    REQUIRE(p.top.size() == 2);
    CHECK(p.top[0].probability >= p.top[1].probability);
    CHECK(p.top[0].probability + p.top[1].probability == Approx(1.0));
    CHECK(p.top[0].name == (p.top[0].label == 0 ? "cat" : "dog"));
    CHECK(p.tta_mode.empty());
    // The saved model's logits for the image as predict prepares it (32 px, centre crop) and runs
    // it (in training's memory format, train.channels_last: use_training_memory_format).
    std::string error;
    const auto image = ltfit::load_square_image(p.image, 32, {}, &error);
    REQUIRE(image);
    torch::NoGradGuard no_grad;
    ltfit::set_channels_last(saved);
    const torch::Tensor logits =
        saved->forward(ltfit::normalize_images(image->unsqueeze(0), torch::kCPU, true))[0];
    REQUIRE(p.logits);
    REQUIRE(p.logits->size() == 2);
    CHECK((*p.logits)[0] == logits[0].item<float>());
    CHECK((*p.logits)[1] == logits[1].item<float>());
    ltfit::set_channels_last(unfolded);
    const torch::Tensor plain =
        unfolded->forward(ltfit::normalize_images(image->unsqueeze(0), torch::kCPU, true))[0];
    CHECK(((*p.logits)[0] - plain[0].item<float>()) == Approx(0.0).margin(1e-4));
    CHECK(((*p.logits)[1] - plain[1].item<float>()) == Approx(0.0).margin(1e-4));
  }
}

TEST_CASE("predict_job: requests without a usable model are ConfigErrors", "[jobs]") {
  ltfit::PredictRequest request;
  request.images = {"a.jpg"};
  CHECK_THROWS_AS(ltfit::run_predict_job(request), ltfit::ConfigError);  // no model at all
  request.weights = "w.pth";
  CHECK_THROWS_AS(ltfit::run_predict_job(request), ltfit::ConfigError);  // --weights, no --arch
  request.weights.clear();
  request.tta = true;
  CHECK_THROWS_AS(ltfit::run_predict_job(request), ltfit::ConfigError);  // --tta, no checkpoint
  request.checkpoint = "/nonexistent/x.ckpt";
  CHECK_THROWS_AS(ltfit::run_predict_job(request), ltfit::CheckpointError);
  request.tta = false;
  request.weights = "w.pth";  // with a checkpoint: one or the other
  CHECK_THROWS_AS(ltfit::run_predict_job(request), ltfit::ConfigError);
}

TEST_CASE("read_export_meta ignores another file of the sidecar's name, refuses a broken one",
          "[jobs][export]") {
  TempDir dir;
  const std::string weights = (dir.path() / "resnet18.pth").string();
  CHECK_FALSE(ltfit::read_export_meta(weights).has_value());  // no sidecar
  // A torchvision reference's expected logits, say: not ours, so not a reason to refuse the file.
  ltfit::testing::write_file(dir.path() / "resnet18.json", "{\"input\": [1, 2], \"logits\": []}\n");
  CHECK_FALSE(ltfit::read_export_meta(weights).has_value());
  ltfit::testing::write_file(dir.path() / "resnet18.json", "not json at all");
  CHECK_FALSE(ltfit::read_export_meta(weights).has_value());
  // One that says it is an export's description must be a whole one of this version.
  ltfit::testing::write_file(dir.path() / "resnet18.json",
                             "{\"format\": \"ltfit-export\", \"version\": 2}");
  CHECK_THROWS_AS(ltfit::read_export_meta(weights), ltfit::CheckpointError);
  ltfit::testing::write_file(dir.path() / "resnet18.json",
                             "{\"format\": \"ltfit-export\", \"version\": 1, \"arch\": 3}");
  CHECK_THROWS_AS(ltfit::read_export_meta(weights), ltfit::CheckpointError);
}
