#include "ltfit/model/pretrained.h"
#include "ltfit/model/arch_registry.h"

#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>
#include <string>

#include "ltfit/util/error.h"
#include "ltfit/util/sha256.h"
#include "support/http_server.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using ltfit::Classifier;
using ltfit::HeadKind;
using ltfit::StateDict;
using ltfit::testing::HttpServer;
using ltfit::testing::TempDir;

namespace {

// Sets (or unsets, with nullopt) an environment variable for the scope; restores it after.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::optional<std::string>& value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    apply(value);
  }
  ~ScopedEnv() { apply(old_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  void apply(const std::optional<std::string>& value) {
    if (value) {
      setenv(name_.c_str(), value->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  std::string name_;
  std::optional<std::string> old_;
};

std::string random_payload(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string bytes(n, '\0');
  for (char& c : bytes) c = static_cast<char>(rng() & 0xFF);
  return bytes;
}

size_t files_in(const fs::path& dir) {
  if (!fs::exists(dir)) return 0;
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

// A torchvision-like state dict: every parameter and buffer of `model`, cloned.
StateDict state_of(Classifier& model) {
  StateDict state;
  for (const auto& item : model->named_parameters())
    state.emplace_back(item.key(), item.value().clone());
  for (const auto& item : model->named_buffers())
    state.emplace_back(item.key(), item.value().clone());
  return state;
}

torch::Tensor& entry(StateDict& state, const std::string& name) {
  for (auto& [key, tensor] : state) {
    if (key == name) return tensor;
  }
  throw std::runtime_error("no " + name);
}

torch::Tensor param(Classifier& model, const std::string& name) {
  auto params = model->named_parameters();
  auto buffers = model->named_buffers();
  if (params.contains(name)) return params[name];
  return buffers[name];
}

template <typename Fn>
std::string checkpoint_error(Fn&& fn) {
  try {
    fn();
  } catch (const ltfit::CheckpointError& e) {
    return std::string(e.what()) + " | " + e.hint();
  }
  FAIL("expected a CheckpointError");
  return "";
}

// A resnet18 state with 1000 classes and recognisable (non-init) values.
StateDict imagenet_like_state() {
  torch::manual_seed(1);
  Classifier source = ltfit::make_classifier("resnet18", 1000);
  StateDict state = state_of(source);
  entry(state, "conv1.weight").normal_();
  entry(state, "bn1.running_mean").uniform_();
  entry(state, "layer4.1.bn2.running_var").uniform_(1.0, 2.0);
  return state;
}

}  // namespace

TEST_CASE("torchvision weight file names, hash prefixes and URLs", "[pretrained]") {
  CHECK(ltfit::torchvision_weights_file("resnet18") == "resnet18-f37072fd.pth");
  CHECK(ltfit::torchvision_weights_file("resnet34") == "resnet34-b627a593.pth");
  CHECK(ltfit::torchvision_weights_file("resnet50") == "resnet50-0676ba61.pth");
  CHECK(ltfit::torchvision_weights_file("resnet101") == "resnet101-63fe2227.pth");
  CHECK(ltfit::torchvision_weights_file("resnet152") == "resnet152-394f9c45.pth");
  CHECK_THROWS_AS(ltfit::torchvision_weights_file("resnet19"), ltfit::ConfigError);
  CHECK_THROWS_WITH(ltfit::torchvision_weights_file("resnet19"),
                    Catch::Contains("resnet19") && Catch::Contains("resnet152"));

  CHECK(ltfit::torchvision_weights_hash_prefix("resnet34-b627a593.pth") == "b627a593");
  CHECK(ltfit::torchvision_weights_hash_prefix("weights.pth").empty());

  CHECK(ltfit::torchvision_weights_url("resnet50") ==
        "https://download.pytorch.org/models/resnet50-0676ba61.pth");
  CHECK(ltfit::torchvision_weights_url("resnet18", "http://mirror/w") ==
        "http://mirror/w/resnet18-f37072fd.pth");
  CHECK(ltfit::torchvision_weights_url("resnet18", "http://mirror/w/") ==
        "http://mirror/w/resnet18-f37072fd.pth");
}

TEST_CASE("torch hub checkpoint dir follows TORCH_HOME, XDG_CACHE_HOME, HOME", "[pretrained]") {
  ScopedEnv home("HOME", "/h");
  {
    ScopedEnv torch_home("TORCH_HOME", "/t");
    ScopedEnv xdg("XDG_CACHE_HOME", "/x");
    CHECK(ltfit::torch_hub_checkpoint_dir() == "/t/hub/checkpoints");
  }
  {
    ScopedEnv torch_home("TORCH_HOME", std::nullopt);
    ScopedEnv xdg("XDG_CACHE_HOME", "/x");
    CHECK(ltfit::torch_hub_checkpoint_dir() == "/x/torch/hub/checkpoints");
  }
  {
    ScopedEnv torch_home("TORCH_HOME", std::nullopt);
    ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
    CHECK(ltfit::torch_hub_checkpoint_dir() == "/h/.cache/torch/hub/checkpoints");
  }
}

TEST_CASE("fetch_cached_weights downloads, verifies and then reuses the cache", "[pretrained]") {
  REQUIRE(ltfit::testing::python3_available());
  TempDir served, cache;
  const std::string content = random_payload(200000, 3);
  const std::string name = "resnet18-" + ltfit::sha256_hex(content).substr(0, 8) + ".pth";
  ltfit::testing::write_file(served.path() / name, content);
  const fs::path cache_dir = cache.path() / "hub" / "checkpoints";
  HttpServer server(served.path());

  const std::string path =
      ltfit::fetch_cached_weights(name, server.url() + "/", cache_dir.string());
  CHECK(path == (cache_dir / name).string());
  CHECK(ltfit::testing::read_file(path) == content);
  CHECK(files_in(cache_dir) == 1);  // no .partial left

  server.stop();  // the second call must not need the network
  CHECK(ltfit::fetch_cached_weights(name, server.url(), cache_dir.string()) == path);
}

TEST_CASE("fetch_cached_weights rejects a file whose hash does not match its name",
          "[pretrained]") {
  REQUIRE(ltfit::testing::python3_available());
  TempDir served, cache;
  const std::string content = "not the weights you are looking for";
  const std::string sha = ltfit::sha256_hex(content);
  const std::string name = "resnet18-f37072fd.pth";
  ltfit::testing::write_file(served.path() / name, content);
  HttpServer server(served.path());

  const std::string message =
      checkpoint_error([&] { ltfit::fetch_cached_weights(name, server.url(), cache.str()); });
  CHECK_THAT(message, Catch::Contains(server.url() + "/" + name) && Catch::Contains(sha) &&
                          Catch::Contains("f37072fd"));
  CHECK(files_in(cache.path()) == 0);
}

TEST_CASE("fetch_cached_weights names the URL and a way out when the download fails",
          "[pretrained]") {
  REQUIRE(ltfit::testing::python3_available());
  TempDir served, cache;
  HttpServer server(served.path());
  const std::string message = checkpoint_error(
      [&] { ltfit::fetch_cached_weights("resnet18-f37072fd.pth", server.url(), cache.str()); });
  CHECK_THAT(message, Catch::Contains(server.url() + "/resnet18-f37072fd.pth") &&
                          Catch::Contains("404") &&
                          Catch::Contains("download it yourself to " +
                                          (cache.path() / "resnet18-f37072fd.pth").string()) &&
                          Catch::Contains("model.pretrained: none"));
  CHECK(files_in(cache.path()) == 0);
}

TEST_CASE("resolve_pretrained_file uses TORCH_HOME and LTFIT_WEIGHTS_BASE_URL", "[pretrained]") {
  REQUIRE(ltfit::testing::python3_available());
  TempDir torch_home, served;
  ScopedEnv home_env("TORCH_HOME", torch_home.str());
  const fs::path cache_dir = torch_home.path() / "hub" / "checkpoints";

  SECTION("a wrong file from the mirror is fetched from there, rejected and not cached") {
    ltfit::testing::write_file(served.path() / "resnet18-f37072fd.pth", "bogus");
    HttpServer server(served.path());
    ScopedEnv base_env("LTFIT_WEIGHTS_BASE_URL", server.url());
    const std::string message = checkpoint_error(
        [] { ltfit::resolve_pretrained_file(ltfit::PretrainedWeights{}, "resnet18"); });
    CHECK_THAT(message, Catch::Contains(server.url() + "/resnet18-f37072fd.pth") &&
                            Catch::Contains(ltfit::sha256_hex("bogus")));
    CHECK(files_in(cache_dir) == 0);
  }
  SECTION("a cached file is used without any server") {
    ltfit::testing::write_file(cache_dir / "resnet34-b627a593.pth", "cached");
    ScopedEnv base_env("LTFIT_WEIGHTS_BASE_URL", "http://127.0.0.1:1");
    CHECK(ltfit::resolve_pretrained_file(ltfit::PretrainedWeights{}, "resnet34") ==
          (cache_dir / "resnet34-b627a593.pth").string());
  }
}

TEST_CASE("resolve_pretrained_file checks a local path", "[pretrained]") {
  TempDir dir;
  const fs::path file = dir.path() / "mine.pth";
  ltfit::testing::write_file(file, "x");
  CHECK(ltfit::resolve_pretrained_file(ltfit::PretrainedWeights::file(file.string()), "resnet18") ==
        file.string());
  const std::string missing = (dir.path() / "nope.pth").string();
  const std::string message = checkpoint_error(
      [&] { ltfit::resolve_pretrained_file(ltfit::PretrainedWeights::file(missing), "resnet18"); });
  CHECK_THAT(message, Catch::Contains("model.pretrained") && Catch::Contains(missing));
}

TEST_CASE("load_pretrained_body copies the body and replaces the classifier", "[pretrained]") {
  const StateDict state = imagenet_like_state();
  const torch::Tensor& conv1 = state[0].second;
  REQUIRE(state[0].first == "conv1.weight");

  SECTION("torchvision head with 2 classes: fc skipped, body copied exactly") {
    Classifier model = ltfit::make_classifier("resnet18", 2);
    const torch::Tensor fc_before = param(model, "fc.weight").clone();
    ltfit::load_pretrained_body(model, state, "w.pth");
    CHECK(torch::equal(param(model, "conv1.weight"), conv1));
    for (const auto& [name, tensor] : state) {
      if (name.rfind("fc.", 0) == 0) continue;
      INFO(name);
      CHECK(torch::equal(param(model, name), tensor));
    }
    CHECK(torch::equal(param(model, "fc.weight"), fc_before));
    CHECK(param(model, "conv1.weight").requires_grad());
  }
  SECTION("1000 classes: fc copied too") {
    Classifier model = ltfit::make_classifier("resnet18", 1000);
    ltfit::load_pretrained_body(model, state, "w.pth");
    CHECK(
        torch::equal(param(model, "fc.weight"), entry(const_cast<StateDict&>(state), "fc.weight")));
  }
  SECTION("fastai head: fc ignored, head untouched") {
    Classifier model = ltfit::make_classifier("resnet18", 2, HeadKind::kFastai, 0.5);
    std::vector<torch::Tensor> head_before;
    for (const auto& item : model->named_parameters()) {
      if (item.key().rfind("head.", 0) == 0) head_before.push_back(item.value().clone());
    }
    REQUIRE_FALSE(head_before.empty());
    ltfit::load_pretrained_body(model, state, "w.pth");
    CHECK(torch::equal(param(model, "conv1.weight"), conv1));
    CHECK(torch::equal(param(model, "layer4.1.bn2.running_var"),
                       entry(const_cast<StateDict&>(state), "layer4.1.bn2.running_var")));
    size_t i = 0;
    for (const auto& item : model->named_parameters()) {
      if (item.key().rfind("head.", 0) == 0) CHECK(torch::equal(item.value(), head_before[i++]));
    }
  }
  SECTION("half-precision weights are converted") {
    StateDict half = state;
    for (auto& [name, tensor] : half) {
      if (tensor.is_floating_point()) tensor = tensor.to(torch::kHalf);
    }
    Classifier model = ltfit::make_classifier("resnet18", 2);
    ltfit::load_pretrained_body(model, half, "half.pth");
    CHECK(param(model, "conv1.weight").scalar_type() == torch::kFloat);
    CHECK(torch::equal(param(model, "conv1.weight"), half[0].second.to(torch::kFloat)));
  }
}

TEST_CASE("load_pretrained_body rejects mismatched files before copying", "[pretrained]") {
  StateDict state = imagenet_like_state();
  Classifier model = ltfit::make_classifier("resnet18", 2);
  const torch::Tensor conv1_before = param(model, "conv1.weight").clone();
  std::string message;

  SECTION("a missing key") {
    StateDict broken;
    for (auto& item : state) {
      if (item.first != "layer3.1.bn2.running_mean") broken.push_back(item);
    }
    message = checkpoint_error([&] { ltfit::load_pretrained_body(model, broken, "w.pth"); });
    CHECK_THAT(message, Catch::Contains("'w.pth' has no tensor 'layer3.1.bn2.running_mean'") &&
                            Catch::Contains("model.pretrained"));
  }
  SECTION("a wrong shape") {
    entry(state, "layer2.0.conv1.weight") = torch::zeros({128, 64, 5, 5});
    message = checkpoint_error([&] { ltfit::load_pretrained_body(model, state, "w.pth"); });
    CHECK_THAT(message, Catch::Contains("layer2.0.conv1.weight") &&
                            Catch::Contains("[128, 64, 5, 5]") &&
                            Catch::Contains("[128, 64, 3, 3]"));
  }
  SECTION("an unexpected key") {
    state.emplace_back("layer5.0.conv1.weight", torch::zeros({1}));
    message = checkpoint_error([&] { ltfit::load_pretrained_body(model, state, "w.pth"); });
    CHECK_THAT(message, Catch::Contains("layer5.0.conv1.weight"));
  }
  SECTION("a resnet50 file into a resnet18") {
    Classifier r50 = ltfit::make_classifier("resnet50", 1000);
    const StateDict other = state_of(r50);
    message = checkpoint_error([&] { ltfit::load_pretrained_body(model, other, "r50.pth"); });
    CHECK_THAT(message, Catch::Contains("r50.pth"));
  }
  CHECK(torch::equal(param(model, "conv1.weight"), conv1_before));
}
