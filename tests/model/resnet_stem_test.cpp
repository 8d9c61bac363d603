// model.stem (resnet.h): the CIFAR adaptation of a ResNet's first layers, a 3×3 stride-1 conv1
// and no max-pool, under torchvision's module names (parity with the same change made to
// torchvision's model is tests/jobs/export_python_oracle.sh's); other families refuse it; and
// pretrained weights fill everything but the 3×3 conv1.
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "ltfit/config/config.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/model/model_factory.h"
#include "ltfit/model/torch_weights.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

using Catch::Matchers::Contains;

TEST_CASE("model.stem cifar: 3x3 stride-1 conv1, no max-pool, torchvision's names",
          "[model][stem]") {
  torch::manual_seed(0);
  ltfit::Classifier imagenet = ltfit::make_classifier("resnet18", 3, ltfit::HeadKind::kLinear, 0.5);
  ltfit::Classifier cifar =
      ltfit::make_classifier("resnet18", 3, ltfit::HeadKind::kLinear, 0.5, ltfit::Stem::kCifar);
  CHECK(cifar->named_parameters()["conv1.weight"].sizes() == torch::IntArrayRef({64, 3, 3, 3}));
  CHECK(imagenet->named_parameters()["conv1.weight"].sizes() == torch::IntArrayRef({64, 3, 7, 7}));
  CHECK(cifar->named_parameters().keys() == imagenet->named_parameters().keys());
  cifar->eval();
  imagenet->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::randn({2, 3, 32, 32});
  // 32 px: layer4 at 4×4 with the CIFAR stem (stride 8), 1×1 with ImageNet's (stride 32).
  CHECK(cifar->features(x).sizes() == torch::IntArrayRef({2, 512, 4, 4}));
  CHECK(imagenet->features(x).sizes() == torch::IntArrayRef({2, 512, 1, 1}));
  CHECK(cifar->forward(x).sizes() == torch::IntArrayRef({2, 3}));
  // A bottleneck ResNet takes it too.
  ltfit::Classifier r50 =
      ltfit::make_classifier("resnet50", 3, ltfit::HeadKind::kFastai, 0.5, ltfit::Stem::kCifar);
  r50->eval();
  CHECK(r50->features(x).sizes() == torch::IntArrayRef({2, 2048, 4, 4}));
}

TEST_CASE("model.stem cifar is refused for families without it", "[model][stem]") {
  try {
    ltfit::make_classifier("convnext_tiny", 3, ltfit::HeadKind::kLinear, 0.5, ltfit::Stem::kCifar);
    FAIL("convnext_tiny took the CIFAR stem");
  } catch (const ltfit::ConfigError& e) {
    CHECK_THAT(std::string(e.what()), Contains("model.stem: cifar") && Contains("convnext_tiny"));
  }
}

TEST_CASE("model.stem cifar with pretrained weights: all but the 3x3 conv1 from the file",
          "[model][stem]") {
  ltfit::testing::TempDir dir;
  torch::manual_seed(1);
  ltfit::Classifier source =
      ltfit::make_classifier("resnet18", 1000, ltfit::HeadKind::kLinear, 0.5);
  ltfit::StateDict state;
  for (const auto& p : source->named_parameters()) state.emplace_back(p.key(), p.value().detach());
  for (const auto& b : source->named_buffers()) state.emplace_back(b.key(), b.value().detach());
  const std::string file = (dir.path() / "resnet18-imagenet.pth").string();
  ltfit::write_torch_state_dict(file, state);
  ltfit::ModelConfig model;
  model.arch = "resnet18";
  model.head = ltfit::HeadKind::kLinear;
  model.pretrained = ltfit::parse_pretrained(file);
  model.stem = ltfit::Stem::kCifar;
  ltfit::Classifier net = ltfit::build_model(model, 2);
  const auto params = net->named_parameters();
  CHECK(params["conv1.weight"].sizes() == torch::IntArrayRef({64, 3, 3, 3}));
  CHECK(torch::equal(params["layer1.0.conv1.weight"],
                     source->named_parameters()["layer1.0.conv1.weight"]));
  CHECK(torch::equal(params["bn1.weight"], source->named_parameters()["bn1.weight"]));
  CHECK(params["fc.weight"].sizes() == torch::IntArrayRef({2, 512}));
}
