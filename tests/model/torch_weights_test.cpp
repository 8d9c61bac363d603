// read/write_torch_state_dict against PyTorch itself: fixtures are written by torch.save
// (make_weights_fixtures.py, with the expected values as JSON) and ltfit's output is read back by
// torch.load(weights_only=True). Values must match exactly (no tolerance: no arithmetic happens).
#include <torch/torch.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <random>

#include "ltfit/model/torch_weights.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace {

namespace fs = std::filesystem;
using ltfit::CheckpointError;
using ltfit::testing::read_file;
using ltfit::testing::TempDir;
using ltfit::testing::write_file;

std::string script() {
  return (ltfit::testing::source_dir() / "tests/model/make_weights_fixtures.py").string();
}

// Runs a shell command, returns its exit status and (stdout + stderr).
std::pair<int, std::string> run(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  return {pclose(pipe), out};
}

// torch is part of the project's setup (scripts/setup.sh), so a failing generator fails the test.
const TempDir& fixtures() {
  static const TempDir dir;
  static const bool made = [] {
    auto [status, out] = run("python3 '" + script() + "' '" + dir.str() + "'");
    INFO(out);
    REQUIRE(status == 0);
    return true;
  }();
  (void)made;
  return dir;
}

std::string fixture(const std::string& name) { return (fixtures().path() / name).string(); }

void check_equals_expected(const ltfit::StateDict& sd, const std::string& file) {
  const auto expected = nlohmann::json::parse(read_file(fixtures().path() / "expected.json"))[file];
  REQUIRE(sd.size() == expected.size());
  for (const auto& [name, want] : expected.items()) {  // nlohmann sorts keys: look names up
    INFO(name);
    auto it = std::find_if(sd.begin(), sd.end(), [&](const auto& e) { return e.first == name; });
    REQUIRE(it != sd.end());
    const torch::Tensor& t = it->second;
    CHECK(t.sizes().vec() == want["shape"].get<std::vector<std::int64_t>>());
    const auto values = want["values"].get<std::vector<double>>();
    const torch::Tensor flat = t.to(torch::kFloat64).contiguous().flatten();
    REQUIRE(flat.numel() == std::int64_t(values.size()));
    const double* got = flat.data_ptr<double>();
    for (std::size_t k = 0; k < values.size(); ++k) CHECK(got[k] == values[k]);
  }
}

std::string dtype_name(torch::Dtype d) {
  switch (d) {
    case torch::kFloat32:
      return "float32";
    case torch::kFloat64:
      return "float64";
    case torch::kFloat16:
      return "float16";
    case torch::kBFloat16:
      return "bfloat16";
    case torch::kInt64:
      return "int64";
    case torch::kInt32:
      return "int32";
    case torch::kUInt8:
      return "uint8";
    case torch::kBool:
      return "bool";
    default:
      return "other";
  }
}

void check_dtypes(const ltfit::StateDict& sd, const std::string& file) {
  const auto expected = nlohmann::json::parse(read_file(fixtures().path() / "expected.json"))[file];
  for (const auto& [name, t] : sd) {
    INFO(name);
    CHECK(dtype_name(t.scalar_type()) == expected[name]["dtype"].get<std::string>());
  }
}

std::string verify(const std::string& written, const std::string& reference, bool module) {
  return run("python3 '" + script() + "' verify '" + written + "' '" + reference + "'" +
             (module ? " module" : ""))
      .second;
}

}  // namespace

TEST_CASE("read_torch_state_dict reads torch.save files of every dtype and layout",
          "[weights][model]") {
  const ltfit::StateDict sd = ltfit::read_torch_state_dict(fixture("basic.pth"));
  check_equals_expected(sd, "basic.pth");
  check_dtypes(sd, "basic.pth");
  std::vector<std::string> names;
  for (const auto& e : sd) names.push_back(e.first);
  CHECK(names == std::vector<std::string>{"f32", "f64", "f16", "bf16", "i64", "i32", "u8", "mask",
                                          "transposed", "shared_a", "shared_b", "scalar", "empty"});
}

TEST_CASE("read_torch_state_dict reads a module's state dict and fastai's {model, opt}",
          "[weights][model]") {
  const ltfit::StateDict sd = ltfit::read_torch_state_dict(fixture("module.pth"));
  check_equals_expected(sd, "module.pth");
  check_dtypes(sd, "module.pth");
  REQUIRE(sd.size() == 7);
  CHECK(sd[6].first == "1.num_batches_tracked");
  CHECK(sd[6].second.item<std::int64_t>() == 12345);

  for (const char* other : {"fastai.pth", "resnet18-f37072fd.pth"}) {
    INFO(other);
    const ltfit::StateDict same = ltfit::read_torch_state_dict(fixture(other));
    REQUIRE(same.size() == sd.size());
    for (std::size_t i = 0; i < sd.size(); ++i) {
      CHECK(same[i].first == sd[i].first);
      CHECK(torch::equal(same[i].second, sd[i].second));
    }
  }
}

TEST_CASE("write_torch_state_dict output loads in torch.load(weights_only=True)",
          "[weights][model]") {
  TempDir dir;
  for (const char* name : {"module.pth", "basic.pth"}) {
    INFO(name);
    const ltfit::StateDict sd = ltfit::read_torch_state_dict(fixture(name));
    const std::string out = (dir.path() / (std::string("out_") + name)).string();
    ltfit::write_torch_state_dict(out, sd);
    CHECK_FALSE(fs::exists(out + ".tmp"));
    const std::string result = verify(out, fixture(name), std::string(name) == "module.pth");
    INFO(result);
    CHECK(result.find("OK") != std::string::npos);

    const ltfit::StateDict back = ltfit::read_torch_state_dict(out);  // and our own round trip
    REQUIRE(back.size() == sd.size());
    for (std::size_t i = 0; i < sd.size(); ++i) {
      CHECK(back[i].first == sd[i].first);
      CHECK(torch::equal(back[i].second, sd[i].second));
    }
  }
}

TEST_CASE("read_torch_state_dict throws CheckpointError naming the file", "[weights][model]") {
  TempDir dir;
  const auto message_of = [](const std::string& path) {
    try {
      ltfit::read_torch_state_dict(path);
    } catch (const CheckpointError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string missing = (dir.path() / "missing.pth").string();
  CHECK_THAT(message_of(missing), Catch::Contains(missing) && Catch::Contains("does not exist"));

  const fs::path text = dir.path() / "text.pth";
  write_file(text, "these are not weights\n");
  CHECK_THAT(message_of(text.string()), Catch::Contains(text.string()) && Catch::Contains("zip"));

  const std::string valid = read_file(fixture("module.pth"));
  const fs::path truncated = dir.path() / "truncated.pth";
  write_file(truncated, valid.substr(0, valid.size() / 2));
  CHECK_THAT(message_of(truncated.string()), Catch::Contains(truncated.string()));

  CHECK_THAT(message_of(fixture("legacy.pth")),
             Catch::Contains("legacy (pre-1.6)") &&
                 Catch::Contains("_use_new_zipfile_serialization=True"));
  CHECK_THAT(message_of(fixture("unsupported.pth")), Catch::Contains("fractions.Fraction"));
  CHECK_THAT(message_of(fixture("no_storage.pth")), Catch::Contains("data/0"));
}

TEST_CASE("read_torch_state_dict survives corrupted files", "[weights][model]") {
  TempDir dir;
  const std::string valid = read_file(fixture("module.pth"));
  const fs::path path = dir.path() / "fuzz.pth";
  std::mt19937 rng(1234);
  int errors = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string bytes = valid;
    if (trial % 3 == 0) {
      bytes.resize(std::uniform_int_distribution<std::size_t>(0, bytes.size() - 1)(rng));
    } else {
      for (int flips = 0; flips < 1 + trial % 4; ++flips) {
        const auto at = std::uniform_int_distribution<std::size_t>(0, bytes.size() - 1)(rng);
        bytes[at] = char(std::uniform_int_distribution<int>(0, 255)(rng));
      }
    }
    write_file(path, bytes);
    INFO("trial " << trial);
    try {
      ltfit::read_torch_state_dict(path.string());
    } catch (const CheckpointError&) {
      ++errors;
    }  // anything else escapes and fails the test
  }
  CHECK(errors > 50);  // truncations alone are a third of the trials
}
