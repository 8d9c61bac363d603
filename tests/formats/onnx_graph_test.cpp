// The ONNX writer (formats/onnx_graph.h), read back with the messages it was written with: the
// IR version of each opset, typed inputs with dynamic axes, attributes of every kind, raw
// little-endian initializers, metadata, external data beside the model for large weights, and a
// write into a folder that cannot be written leaving nothing behind.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>

#include <torch/torch.h>

#include "ltfit/formats/onnx_graph.h"
#include "ltfit/util/error.h"
#include "ltfit_onnx.pb.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
namespace onnx = ltfit::onnx;

namespace {

onnx::Graph small_graph() {
  onnx::Graph graph("small");
  graph.add_input("x", onnx::ElementType::kFloat,
                  {onnx::Dim::dynamic("batch"), onnx::Dim::fixed(4)});
  const std::string w =
      graph.add_initializer("fc.weight", torch::arange(12, torch::kFloat).view({3, 4}));
  graph.add_initializer("fc.bias", torch::tensor({1.f, 2.f, 3.f}));
  const std::string y = graph.add_node("Gemm", {"x", w, "fc.bias"}, {graph.fresh("fc")},
                                       {{"transB", std::int64_t{1}},
                                        {"alpha", 1.0f},
                                        {"note", std::string("s")},
                                        {"ints", std::vector<std::int64_t>{0, 1}},
                                        {"floats", std::vector<float>{0.5f}}});
  graph.add_node("Identity", {y}, {"logits"});
  graph.add_output("logits", onnx::ElementType::kFloat,
                   {onnx::Dim::dynamic("batch"), onnx::Dim::fixed(3)});
  return graph;
}

ltfit::onnx_pb::ModelProto read_model(const fs::path& path) {
  ltfit::onnx_pb::ModelProto model;
  REQUIRE(model.ParseFromString(ltfit::testing::read_file(path)));
  return model;
}

}  // namespace

TEST_CASE("the ONNX writer: IR version, inputs, attributes, initializers, metadata", "[onnx]") {
  CHECK(onnx::ir_version_for_opset(17) == 8);
  CHECK(onnx::ir_version_for_opset(18) == 8);
  CHECK(onnx::ir_version_for_opset(20) == 9);
  CHECK(onnx::ir_version_for_opset(21) == 10);
  ltfit::testing::TempDir dir;
  const fs::path path = dir.path() / "m.onnx";
  onnx::ModelInfo info;
  info.opset = 19;
  info.metadata = {{"arch", "resnet18"}, {"classes", "[\"cat\",\"dog\"]"}};
  const onnx::WrittenModel written = onnx::write_onnx_model(small_graph(), info, path.string());
  CHECK(written.external_data.empty());
  CHECK(written.bytes == fs::file_size(path));

  const auto model = read_model(path);
  CHECK(model.ir_version() == 9);
  CHECK(model.producer_name() == "ltfit");
  REQUIRE(model.opset_import_size() == 1);
  CHECK(model.opset_import(0).domain().empty());
  CHECK(model.opset_import(0).version() == 19);
  REQUIRE(model.metadata_props_size() == 2);
  CHECK(model.metadata_props(1).key() == "classes");
  const auto& g = model.graph();
  REQUIRE(g.input_size() == 1);
  CHECK(g.input(0).type().tensor_type().elem_type() == 1);
  CHECK(g.input(0).type().tensor_type().shape().dim(0).dim_param() == "batch");
  CHECK(g.input(0).type().tensor_type().shape().dim(1).dim_value() == 4);
  REQUIRE(g.node_size() == 2);
  const auto& gemm = g.node(0);
  CHECK(gemm.op_type() == "Gemm");
  CHECK(gemm.output(0) == "fc");
  REQUIRE(gemm.attribute_size() == 5);
  CHECK(gemm.attribute(0).type() == ltfit::onnx_pb::AttributeProto_AttributeType_INT);
  CHECK(gemm.attribute(0).i() == 1);
  CHECK(gemm.attribute(1).f() == 1.0f);
  CHECK(gemm.attribute(2).s() == "s");
  CHECK(gemm.attribute(3).ints_size() == 2);
  CHECK(gemm.attribute(3).ints(0) == 0);  // a zero written explicitly stays (proto2)
  CHECK(gemm.attribute(4).floats(0) == 0.5f);
  REQUIRE(g.initializer_size() == 2);
  const auto& weight = g.initializer(0);
  CHECK(weight.name() == "fc.weight");
  CHECK(weight.dims_size() == 2);
  CHECK(weight.raw_data().size() == 12 * 4);
  float eleventh = 0;
  std::memcpy(&eleventh, weight.raw_data().data() + 11 * 4, 4);
  CHECK(eleventh == 11.0f);
}

TEST_CASE("the ONNX writer keeps large weights in external data beside the model", "[onnx]") {
  ltfit::testing::TempDir dir;
  const fs::path path = dir.path() / "big.onnx";
  onnx::ModelInfo info;
  info.external_data_above = 16;  // 60 bytes of weights: external
  const auto written = onnx::write_onnx_model(small_graph(), info, path.string());
  CHECK(written.external_data == path.string() + ".data");
  REQUIRE(fs::exists(written.external_data));
  const auto model = read_model(path);
  const auto& weight = model.graph().initializer(0);
  CHECK(weight.raw_data().empty());
  CHECK(weight.data_location() == ltfit::onnx_pb::TensorProto_DataLocation_EXTERNAL);
  REQUIRE(weight.external_data_size() == 3);
  CHECK(weight.external_data(0).value() == "big.onnx.data");  // relative to the model
  const auto& bias = model.graph().initializer(1);
  const std::uint64_t offset = std::stoull(bias.external_data(1).value());
  CHECK(offset % 4096 == 0);
  const std::string data = ltfit::testing::read_file(written.external_data);
  float second = 0;
  std::memcpy(&second, data.data() + offset + 4, 4);
  CHECK(second == 2.0f);
}

TEST_CASE("an ONNX model that cannot be written leaves nothing behind", "[onnx]") {
  ltfit::testing::TempDir dir;
  ltfit::testing::write_file(dir.path() / "not-a-folder", "x");
  CHECK_THROWS_AS(
      onnx::write_onnx_model(small_graph(), {}, (dir.path() / "not-a-folder" / "m.onnx").string()),
      ltfit::RuntimeError);
  onnx::ModelInfo external;
  external.external_data_above = 16;
  CHECK_THROWS_AS(onnx::write_onnx_model(small_graph(), external,
                                         (dir.path() / "not-a-folder" / "m.onnx").string()),
                  ltfit::RuntimeError);
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir.path())) ++entries;
  CHECK(entries == 1);  // the file itself, no temporary left
}
