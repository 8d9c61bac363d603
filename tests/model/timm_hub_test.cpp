// `model.pretrained: timm/<name>` (model/timm_hub.h): the Hugging Face cache is read without the
// network (refs/main's snapshot), otherwise the weights are downloaded from HF_ENDPOINT (a loopback
// server laid out as the hub: its API's file list and resolve/main/) into ltfit's cache,
// verified against the listed SHA-256 and then reused; a mismatch leaves nothing behind; the
// config's architecture and statistics are checked against model.arch; names that could leave the
// cache are refused when the config is read.
#include <catch2/catch.hpp>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "ltfit/config/config_enums.h"
#include "ltfit/formats/safetensors.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/model/pretrained.h"
#include "ltfit/model/timm_hub.h"
#include "ltfit/util/error.h"
#include "ltfit/util/sha256.h"
#include "support/http_server.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::TempDir;

namespace {

class EnvSet {
 public:
  EnvSet(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~EnvSet() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string config_json(const std::string& arch, double mean0 = 0.485) {
  return nlohmann::json{{"architecture", arch},
                        {"pretrained_cfg",
                         {{"mean", {mean0, 0.456, 0.406}},
                          {"std", {0.229, 0.224, 0.225}},
                          {"input_size", {3, 224, 224}},
                          {"interpolation", "bicubic"}}}}
      .dump();
}

// A hub repo timm/<name> under `root` as the hub serves it, with `sha` listed for the weights.
void serve_repo(const fs::path& root, const std::string& name, const std::string& weights,
                const std::string& sha) {
  const fs::path files = root / "timm" / name / "resolve" / "main";
  ltfit::testing::write_file(files / "model.safetensors", weights);
  ltfit::testing::write_file(files / "config.json", config_json("resnet18"));
  const nlohmann::json listing = {{"id", "timm/" + name},
                                  {"siblings",
                                   {{{"rfilename", "config.json"}, {"size", 100}},
                                    {{"rfilename", "model.safetensors"},
                                     {"size", weights.size()},
                                     {"lfs", {{"sha256", sha}, {"size", weights.size()}}}}}}};
  ltfit::testing::write_file(root / "api" / "models" / "timm" / name / "revision" / "main",
                             listing.dump());
}

std::size_t files_under(const fs::path& dir) {
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) n += e.is_regular_file() ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("timm/<name>: downloaded once, verified, then read from the cache",
          "[timm][pretrained]") {
  REQUIRE(ltfit::testing::python3_available());
  TempDir served, hf, torch_home;
  const std::string weights = ltfit::safetensors_bytes({{"fc.bias", torch::arange(3.f)}});
  serve_repo(served.path(), "resnet18.test", weights, ltfit::sha256_hex(weights));
  serve_repo(served.path(), "resnet18.bad", weights, std::string(64, '0'));
  ltfit::testing::HttpServer server(served.path());
  EnvSet hub("HF_HUB_CACHE", hf.str()), home("TORCH_HOME", torch_home.str()),
      endpoint("HF_ENDPOINT", server.url());

  const ltfit::TimmFiles files = ltfit::fetch_timm_weights("resnet18.test");
  CHECK(ltfit::testing::read_file(files.weights) == weights);
  CHECK_THAT(files.weights, Contains("timm--resnet18.test"));
  ltfit::read_timm_config(files.config, ltfit::arch_info("resnet18"), "resnet18.test");
  server.stop();  // the second time needs no network
  CHECK(ltfit::fetch_timm_weights("resnet18.test").weights == files.weights);

  ltfit::testing::HttpServer again(served.path());
  EnvSet endpoint2("HF_ENDPOINT", again.url());
  const std::size_t before = files_under(torch_home.path());
  CHECK_THROWS_WITH(ltfit::fetch_timm_weights("resnet18.bad"),
                    Contains("timm/resnet18.bad") && Contains("SHA-256"));
  CHECK(files_under(torch_home.path()) == before);  // nothing half-written left
  CHECK_THROWS_WITH(ltfit::fetch_timm_weights("resnet18.none"),
                    Contains("timm/resnet18.none") && Contains("file list"));
}

TEST_CASE("timm/<name>: the Hugging Face cache's snapshot, config checked against model.arch",
          "[timm][pretrained]") {
  TempDir hf, torch_home;
  const fs::path repo = hf.path() / "models--timm--resnet50.a1_in1k";
  ltfit::testing::write_file(repo / "refs" / "main", "abc123\n");
  ltfit::testing::write_file(repo / "snapshots" / "abc123" / "model.safetensors", "x");
  ltfit::testing::write_file(repo / "snapshots" / "abc123" / "config.json",
                             config_json("resnet50"));
  ltfit::testing::write_file(repo / "snapshots" / "old" / "model.safetensors", "y");
  EnvSet hub("HF_HUB_CACHE", hf.str()), home("TORCH_HOME", torch_home.str()),
      endpoint("HF_ENDPOINT", "http://127.0.0.1:9");  // nothing listens: must not be asked
  const ltfit::TimmFiles files = ltfit::fetch_timm_weights("resnet50.a1_in1k");
  CHECK(files.weights == (repo / "snapshots" / "abc123" / "model.safetensors").string());
  const ltfit::TimmDataConfig data =
      ltfit::read_timm_config(files.config, ltfit::arch_info("resnet50"), "resnet50.a1_in1k");
  REQUIRE(data.normalization.has_value());
  CHECK(data.normalization->mean == std::array<float, 3>{0.485f, 0.456f, 0.406f});
  CHECK(data.input_size == 224);
  CHECK(data.interpolation == "bicubic");
  CHECK(data.crop_pct == 0.0);  // not stated
  CHECK_THROWS_WITH(
      ltfit::read_timm_config(files.config, ltfit::arch_info("resnet18"), "resnet50.a1_in1k"),
      Contains("holds a 'resnet50', and model.arch is 'resnet18'"));
  // Another mean and std (timm's augreg ViTs: 0.5): taken, not refused.
  ltfit::testing::write_file(repo / "snapshots" / "abc123" / "config.json",
                             config_json("resnet50", 0.5));
  CHECK(ltfit::read_timm_config(files.config, ltfit::arch_info("resnet50"), "resnet50.a1_in1k")
            .normalization->mean[0] == 0.5f);
  // Out-of-range values are refused, naming the field.
  for (const auto& [key, value] : {std::pair<std::string, nlohmann::json>{"std", {0.2, 0.0, 0.2}},
                                   {"mean", {1, 2}},
                                   {"input_size", {3, 224, 100}},
                                   {"crop_pct", 7}}) {
    nlohmann::json bad = nlohmann::json::parse(config_json("resnet50"));
    bad["pretrained_cfg"][key] = value;
    ltfit::testing::write_file(repo / "snapshots" / "abc123" / "config.json", bad.dump());
    CHECK_THROWS_WITH(
        ltfit::read_timm_config(files.config, ltfit::arch_info("resnet50"), "resnet50.a1_in1k"),
        Contains("pretrained_cfg." + key));
  }

  using Kind = ltfit::PretrainedWeights::Kind;
  CHECK(ltfit::parse_pretrained("timm/resnet50.a1_in1k").kind == Kind::kTimm);
  CHECK(ltfit::pretrained_name(ltfit::parse_pretrained("timm/resnet50.a1_in1k")) ==
        "timm/resnet50.a1_in1k");
  CHECK(ltfit::parse_pretrained("./timm/x.pth").kind == Kind::kFile);
  for (const char* bad : {"timm/", "timm/../etc", "timm/a/b", "timm/.hidden", "timm/a b"}) {
    INFO(bad);
    CHECK_THROWS_AS(ltfit::parse_pretrained(bad), ltfit::ConfigError);
  }
}

TEST_CASE("timm/<name>: timm's names for torchvision's RegNet-Y, MobileNetV3 and ViT-B/16",
          "[timm][pretrained]") {
  TempDir dir;
  const fs::path config = dir.path() / "config.json";
  const std::pair<const char*, const char*> same[] = {
      {"regnety_008_tv", "regnet_y_800mf"},
      {"regnety_016", "regnet_y_1_6gf"},
      {"mobilenetv3_large_100", "mobilenet_v3_large"},
      {"mobilenetv3_small_100", "mobilenet_v3_small"},
      {"vit_base_patch16_224", "vit_b_16"},
      {"efficientnet_b0", "efficientnet_b0"}};
  for (const auto& [timm, arch] : same) {
    INFO(timm);
    ltfit::testing::write_file(config, config_json(timm));
    CHECK_NOTHROW(ltfit::read_timm_config(config.string(), ltfit::arch_info(arch), "x"));
  }
  ltfit::testing::write_file(config, config_json("regnety_016"));
  CHECK_THROWS_WITH(
      ltfit::read_timm_config(config.string(), ltfit::arch_info("regnet_y_800mf"), "x"),
      Contains("holds a 'regnety_016' (ltfit's regnet_y_1_6gf), and model.arch is "
               "'regnet_y_800mf'"));
  // pycls' regnety_008 is not torchvision's regnet_y_800mf (other stage widths); the hint names
  // the timm model that is.
  ltfit::testing::write_file(config, config_json("regnety_008"));
  try {
    ltfit::read_timm_config(config.string(), ltfit::arch_info("regnet_y_800mf"), "x");
    FAIL("regnety_008 accepted for regnet_y_800mf");
  } catch (const ltfit::ConfigError& e) {
    CHECK_THAT(std::string(e.what()), Contains("holds a 'regnety_008'"));
    CHECK_THAT(e.hint(), Contains("regnety_008_tv"));
  }
}
