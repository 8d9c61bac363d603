// ResNet module tree against torchvision: names, counts, shapes (counts are torchvision's
// `sum(p.numel() for p in resnetNN().parameters())`; state-dict sizes are
// len(resnetNN().state_dict())), for the plain, ResNeXt and wide variants.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <set>

#include "ltfit/model/resnet.h"
#include "ltfit/util/error.h"

namespace {

std::set<std::string> state_names(ltfit::ResNet& net) {
  std::set<std::string> names;
  for (const auto& p : net->named_parameters()) names.insert(p.key());
  for (const auto& b : net->named_buffers()) names.insert(b.key());
  return names;
}

}  // namespace

TEST_CASE("ResNet parameter counts equal torchvision's", "[model]") {
  struct Case {
    const char* arch;
    std::int64_t params;
    std::size_t state_entries;
  };
  const Case cases[] = {{"resnet18", 11689512, 122},
                        {"resnet34", 21797672, 218},
                        {"resnet50", 25557032, 320},
                        {"resnext50_32x4d", 25028904, 320},
                        {"wide_resnet50_2", 68883240, 320}};
  for (const auto& c : cases) {
    INFO(c.arch);
    ltfit::ResNet net(ltfit::resnet_spec(c.arch), 1000);
    CHECK(ltfit::count_parameters(*net) == c.params);
    CHECK(state_names(net).size() == c.state_entries);
  }
}

TEST_CASE("ResNet names equal torchvision's state-dict keys", "[model]") {
  ltfit::ResNet r18(ltfit::resnet_spec("resnet18"), 1000);
  const auto names18 = state_names(r18);
  for (const char* key :
       {"conv1.weight", "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var",
        "bn1.num_batches_tracked", "layer1.0.conv1.weight", "layer1.1.bn2.running_var",
        "layer2.0.downsample.0.weight", "layer2.0.downsample.1.running_mean",
        "layer4.1.conv2.weight", "fc.weight", "fc.bias"}) {
    INFO(key);
    CHECK(names18.count(key) == 1);
  }
  CHECK(names18.count("layer1.0.downsample.0.weight") == 0);  // no projection without need

  ltfit::ResNet r50(ltfit::resnet_spec("resnet50"), 1000);
  const auto names50 = state_names(r50);
  for (const char* key : {"layer1.0.downsample.0.weight", "layer1.0.conv3.weight",
                          "layer3.5.bn3.running_mean", "layer4.2.conv3.weight"}) {
    INFO(key);
    CHECK(names50.count(key) == 1);
  }
  // Bottlenecks stride in the 3x3 conv (v1.5), as torchvision does.
  auto params = r50->named_parameters();
  CHECK(params["layer2.0.conv2.weight"].sizes() == torch::IntArrayRef({128, 128, 3, 3}));
  CHECK(params["fc.weight"].sizes() == torch::IntArrayRef({1000, 2048}));
}

TEST_CASE("ResNeXt groups its 3x3 convolutions and Wide ResNet doubles their width", "[model]") {
  // torchvision: width = int(planes * width_per_group / 64) * groups, groups on conv2.
  ltfit::ResNet next(ltfit::resnet_spec("resnext50_32x4d"), 1000);
  auto p = next->named_parameters();
  CHECK(p["layer1.0.conv1.weight"].sizes() == torch::IntArrayRef({128, 64, 1, 1}));
  CHECK(p["layer1.0.conv2.weight"].sizes() == torch::IntArrayRef({128, 4, 3, 3}));
  CHECK(p["layer4.0.conv2.weight"].sizes() == torch::IntArrayRef({1024, 32, 3, 3}));
  CHECK(p["layer4.2.conv3.weight"].sizes() == torch::IntArrayRef({2048, 1024, 1, 1}));
  ltfit::ResNet wide(ltfit::resnet_spec("wide_resnet50_2"), 1000);
  auto w = wide->named_parameters();
  CHECK(w["layer1.0.conv2.weight"].sizes() == torch::IntArrayRef({128, 128, 3, 3}));
  CHECK(w["layer4.0.conv2.weight"].sizes() == torch::IntArrayRef({1024, 1024, 3, 3}));
  next->eval();
  torch::NoGradGuard no_grad;
  CHECK(next->forward(torch::randn({1, 3, 32, 32})).sizes() == torch::IntArrayRef({1, 1000}));
}

TEST_CASE("ResNet forward gives [N, classes] logits at any input size", "[model]") {
  torch::manual_seed(0);
  ltfit::ResNet net(ltfit::resnet_spec("resnet18"), 2);
  net->eval();
  torch::NoGradGuard no_grad;
  CHECK(net->forward(torch::randn({3, 3, 64, 64})).sizes() == torch::IntArrayRef({3, 2}));
  CHECK(net->forward(torch::randn({1, 3, 97, 120})).sizes() == torch::IntArrayRef({1, 2}));
  CHECK(net->features(torch::randn({1, 3, 224, 224})).sizes() ==
        torch::IntArrayRef({1, 512, 7, 7}));
}

TEST_CASE("fastai head: concat pool, BN, dropout, 512 hidden, Kaiming init", "[model]") {
  ltfit::ResNet net(ltfit::resnet_spec("resnet34"), 2, ltfit::HeadKind::kFastai, 0.5);
  // Body without fc (21,797,672 - 513,000) + BN1d(1024) + Linear(1024,512) + BN1d(512)
  // + Linear(512,2).
  const std::int64_t body = 21797672 - (512 * 1000 + 1000);
  CHECK(ltfit::count_parameters(*net) == body + 2048 + 524800 + 1024 + 1026);
  auto params = net->named_parameters();
  CHECK(params.contains("head.2.weight"));
  CHECK_FALSE(params.contains("fc.weight"));
  CHECK(params["head.2.bias"].abs().sum().item<double>() == 0.0);
  net->eval();
  torch::NoGradGuard no_grad;
  CHECK(net->forward(torch::randn({2, 3, 64, 64})).sizes() == torch::IntArrayRef({2, 2}));
}

TEST_CASE("layer groups split the body at layer3 and hold every parameter once", "[model]") {
  ltfit::ResNet net(ltfit::resnet_spec("resnet18"), 2);
  const auto groups = net->layer_group_parameters();
  REQUIRE(groups.size() == 3);
  std::int64_t total = 0;
  for (const auto& g : groups) {
    for (const auto& p : g) total += p.numel();
  }
  CHECK(total == ltfit::count_parameters(*net));
  CHECK(groups[2].size() == 2);  // fc weight and bias
  CHECK(groups[1].front().sizes() == net->named_parameters()["layer3.0.conv1.weight"].sizes());
}

TEST_CASE("resnet_spec knows only the ResNet family", "[model]") {
  CHECK(ltfit::resnet_spec("resnext50_32x4d").groups == 32);
  CHECK_THROWS_AS(ltfit::resnet_spec("resnet19"), ltfit::ConfigError);
  CHECK_THROWS_AS(ltfit::resnet_spec("convnext_tiny"), ltfit::ConfigError);
}
