// safetensors files (formats/safetensors.h): what the writer writes, the reader reads back, every
// dtype bit for bit with its metadata; and every malformed or hostile header (truncated, too long,
// not JSON, nested, an unknown dtype, shapes that disagree with their offsets or overflow, gaps,
// overlaps, bytes left over) is refused with a message naming what is wrong. The hidden
// "[safetensors_oracle]" test (tests/formats/safetensors_oracle.sh) checks the same against the
// safetensors library, and timm's own weights against timm's logits.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include <torch/torch.h>

#include "ltfit/formats/safetensors.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/model/pretrained.h"
#include "ltfit/model/timm_names.h"
#include "ltfit/model/torch_weights.h"
#include "support/test_support.h"

using Catch::Matchers::Contains;
using ltfit::read_safetensors;
using ltfit::SafetensorsError;

namespace {

// A file of `header` (JSON text, as given) and `data` bytes.
std::string file_of(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const std::uint64_t n = header.size();
  std::memcpy(out.data(), &n, sizeof n);
  return out + header + data;
}

std::string refusal(const std::string& bytes) {
  try {
    read_safetensors(bytes);
  } catch (const SafetensorsError& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("safetensors: what ltfit writes it reads back, every dtype bit for bit",
          "[formats][safetensors]") {
  const std::vector<std::pair<std::string, torch::Tensor>> tensors = {
      {"conv.weight", torch::randn({4, 3, 2, 2})},
      {"half", torch::randn({5}).to(torch::kFloat16)},
      {"brain", torch::randn({2, 3}).to(torch::kBFloat16)},
      {"double", torch::randn({3}, torch::kFloat64)},
      {"bn.num_batches_tracked", torch::tensor(7, torch::kInt64)},
      {"ints", torch::tensor({-1, 2, 3}, torch::kInt32)},
      {"shorts", torch::tensor({-5, 6}, torch::kInt16)},
      {"bytes", torch::tensor({-3, 4}, torch::kInt8)},
      {"pixels", torch::tensor({0, 255}, torch::kUInt8)},
      {"mask", torch::tensor({true, false, true})},
      {"empty", torch::zeros({0, 4})},
      {"strided", torch::arange(12, torch::kFloat).view({3, 4}).t()},
  };
  const std::string bytes = ltfit::safetensors_bytes(tensors, {{"format", "pt"}});
  std::uint64_t header = 0;
  std::memcpy(&header, bytes.data(), 8);
  CHECK(header % 8 == 0);  // padded as the safetensors library pads it
  CHECK(ltfit::looks_like_safetensors(bytes));
  CHECK_FALSE(ltfit::looks_like_safetensors(std::string("PK\x03\x04 a zip", 10)));
  const ltfit::SafetensorsContent read = read_safetensors(bytes);
  CHECK(read.metadata == std::map<std::string, std::string>{{"format", "pt"}});
  REQUIRE(read.tensors.size() == tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    INFO(tensors[i].first);
    CHECK(read.tensors[i].first == tensors[i].first);  // the data's order: as written
    const torch::Tensor& got = read.tensors[i].second;
    CHECK(got.scalar_type() == tensors[i].second.scalar_type());
    CHECK(got.sizes() == tensors[i].second.sizes());
    CHECK(torch::equal(got, tensors[i].second));
  }
}

TEST_CASE("safetensors: malformed and hostile files are refused, saying why",
          "[formats][safetensors]") {
  const std::string f32x2 = std::string(8, '\0');  // two float zeros
  const std::string ok = R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})";
  REQUIRE(refusal(file_of(ok, f32x2)) == "accepted");
  CHECK_THAT(refusal("1234"), Contains("8-byte header length"));
  std::string huge(8, '\0');
  const std::uint64_t big = 1ull << 40;
  std::memcpy(huge.data(), &big, 8);
  CHECK_THAT(refusal(huge + "{}"), Contains("over the"));
  CHECK_THAT(refusal(file_of(ok, f32x2).substr(0, 30)), Contains("truncated"));
  CHECK_THAT(refusal(file_of("[1, 2]", "")), Contains("start with '{'"));
  CHECK_THAT(refusal(file_of("{\"a\": ", "")), Contains("not valid JSON"));
  CHECK_THAT(refusal(file_of(R"({"a": {"b": {"c": {"d": {"e": {}}}}}})", "")),
             Contains("nested deeper"));
  CHECK_THAT(refusal(file_of(R"({"a": [1, 2]})", "")), Contains("expected {\"dtype\""));
  CHECK_THAT(refusal(file_of(R"({"a": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}})",
                             "xx")),
             Contains("dtype 'F8_E4M3' is not supported"));
  CHECK_THAT(
      refusal(file_of(R"({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", f32x2)),
      Contains("whole numbers"));
  CHECK_THAT(
      refusal(file_of(R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", f32x2)),
      Contains("12 bytes"));
  CHECK_THAT(refusal(file_of(R"({"a": {"dtype": "F32", "shape": [1099511627776, 1099511627776,
                             1099511627776], "data_offsets": [0, 8]}})",
                             f32x2)),
             Contains("more bytes than any file holds"));
  CHECK_THAT(
      refusal(file_of(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})", f32x2)),
      Contains("data_offsets [8, 0]"));
  const std::string two = R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                              "b": {"dtype": "F32", "shape": [1], "data_offsets": [2, 6]}})";
  CHECK_THAT(refusal(file_of(two, f32x2)), Contains("overlapping"));
  const std::string gap = R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})";
  CHECK_THAT(refusal(file_of(gap, f32x2)), Contains("a gap"));
  CHECK_THAT(refusal(file_of(ok, f32x2 + "more")), Contains("4 bytes of data after"));
  CHECK_THAT(refusal(file_of(ok, "abc")), Contains("past the file's 3 bytes"));
  CHECK_THAT(refusal(file_of(R"({"__metadata__": {"format": 1}})", "")),
             Contains("__metadata__ values must be strings"));
  // Duplicate names: the last one counts, so the first one's bytes are a gap.
  const std::string dup = R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                              "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})";
  CHECK_THAT(refusal(file_of(dup, f32x2)), Contains("a gap"));
  // Many values in a small header are bounded as they are parsed.
  std::string many = R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "x": [)";
  for (int i = 0; i < 1100000; ++i) many += "0,";
  many += "0]}";
  CHECK_THAT(refusal(file_of(many, f32x2)), Contains("JSON values"));
}

// Run by tests/formats/safetensors_oracle.sh: reads the safetensors library's file and writes its
// tensors back; loads each timm case strictly and writes ltfit's logits.
TEST_CASE("safetensors oracle: read Python's file, write it back, run timm's weights",
          "[.][safetensors_oracle]") {
  const char* dir_env = std::getenv("LTFIT_SAFETENSORS_ORACLE_DIR");
  REQUIRE(dir_env != nullptr);
  const std::filesystem::path dir(dir_env);
  const ltfit::SafetensorsContent py =
      read_safetensors(ltfit::testing::read_file(dir / "py.safetensors"));
  ltfit::testing::write_file(dir / "ltfit.safetensors",
                             ltfit::safetensors_bytes(py.tensors, py.metadata));
  const nlohmann::json cases = nlohmann::json::parse(ltfit::testing::read_file(dir / "cases.json"));
  torch::NoGradGuard no_grad;
  for (const auto& c : cases) {
    const std::string id = c.at("id");
    INFO(id);
    const std::string file = (dir / ("timm_" + id + ".safetensors")).string();
    const ltfit::StateDict state = ltfit::from_timm_names(
        ltfit::read_weights_file(file), ltfit::arch_info(c.at("arch")).family, file);
    ltfit::Classifier model =
        ltfit::make_classifier(c.at("arch"), c.at("classes"), ltfit::HeadKind::kLinear);
    ltfit::load_state_dict_strict(model, state, id);
    model->eval();
    const std::int64_t size = c.at("size");
    const std::string bytes = ltfit::testing::read_file(dir / ("in_" + id + ".bin"));
    const torch::Tensor x =
        torch::from_blob(const_cast<char*>(bytes.data()), {2, 3, size, size}, torch::kFloat)
            .clone();
    const torch::Tensor logits = model->forward(x).contiguous();
    std::ofstream out(dir / ("out_" + id + ".bin"), std::ios::binary);
    out.write(static_cast<const char*>(logits.data_ptr()), logits.nbytes());
  }
}
