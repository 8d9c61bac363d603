// The model as ONNX (model/onnx_export.h): what the graph holds (inputs, outputs, initializers
// named as the state dict, no Dropout), refusals (an opset ltfit does not write, a family without
// an emitter), and, in the hidden "[onnx_oracle]" test run by tests/formats/onnx_oracle.sh, the
// exports that onnx.checker and ONNX Runtime check against ltfit's own logits.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include <torch/torch.h>

#include "ltfit/model/arch_registry.h"
#include "ltfit/model/onnx_export.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

// A model with BatchNorm statistics that are not the identity, in evaluation mode.
ltfit::Classifier model_with_statistics(const std::string& arch, std::int64_t classes,
                                        ltfit::HeadKind head, ltfit::Stem stem) {
  torch::manual_seed(3);
  ltfit::Classifier model = ltfit::make_classifier(arch, classes, head, 0.5, stem);
  torch::NoGradGuard no_grad;
  for (auto& buffer : model->named_buffers()) {
    if (buffer.key().find("running_mean") != std::string::npos) buffer.value().normal_(0, 0.1);
    if (buffer.key().find("running_var") != std::string::npos) buffer.value().uniform_(0.5, 1.5);
  }
  // Parameters that start at zero (biases, ViT's class token and head) made random, so that the
  // comparison sees them.
  for (auto& p : model->parameters()) {
    if (p.numel() > 0 && p.abs().max().item<float>() == 0) p.normal_(0, 0.02);
  }
  model->eval();
  return model;
}

std::set<std::string> ops_of(const ltfit::onnx::Graph& graph) {
  std::set<std::string> ops;
  for (const auto& node : graph.nodes()) ops.insert(node.op);
  return ops;
}

}  // namespace

TEST_CASE("an exported ResNet's graph: inputs, outputs, state-dict initializers, no Dropout",
          "[onnx]") {
  ltfit::Classifier model =
      model_with_statistics("resnet18", 3, ltfit::HeadKind::kFastai, ltfit::Stem::kImagenet);
  ltfit::OnnxExportOptions options;
  options.image_size = 64;
  options.probabilities = true;
  const auto graph = ltfit::onnx_graph_of(*model, ltfit::arch_info("resnet18"), 3, options);
  REQUIRE(graph.inputs().size() == 1);
  CHECK(graph.inputs()[0].name == "input");
  CHECK(graph.inputs()[0].shape[0].name == "batch");
  CHECK(graph.inputs()[0].shape[2].size == 64);
  REQUIRE(graph.outputs().size() == 2);
  CHECK(graph.outputs()[0].name == "logits");
  CHECK(graph.outputs()[1].name == "probabilities");
  const auto ops = ops_of(graph);
  CHECK(ops.count("Dropout") == 0);
  CHECK(ops.count("Softmax") == 1);
  CHECK(ops.count("BatchNormalization") == 1);
  // Every parameter and BatchNorm buffer is an initializer under its state-dict name.
  std::set<std::string> names;
  for (const auto& init : graph.initializers()) names.insert(init.name);
  for (const auto& p : model->named_parameters()) CHECK(names.count(p.key()) == 1);
  CHECK(names.count("layer4.1.bn2.running_var") == 1);
  CHECK(names.count("head.4.running_mean") == 1);
  CHECK(names.count("head.4.num_batches_tracked") == 0);  // not part of the computation
}

TEST_CASE("ONNX with preprocess takes uint8 NHWC and normalises inside, and multi-label a sigmoid",
          "[onnx]") {
  ltfit::Classifier model =
      model_with_statistics("resnet18", 4, ltfit::HeadKind::kLinear, ltfit::Stem::kImagenet);
  ltfit::OnnxExportOptions options;
  options.image_size = 32;
  options.preprocess = true;
  options.probabilities = true;
  options.multi_label = true;
  options.dynamic_size = true;
  const auto graph = ltfit::onnx_graph_of(*model, ltfit::arch_info("resnet18"), 4, options);
  const auto& input = graph.inputs()[0];
  CHECK(input.name == "image");
  CHECK(input.type == ltfit::onnx::ElementType::kUint8);
  CHECK(input.shape[1].name == "height");
  CHECK(input.shape[2].name == "width");
  CHECK(input.shape[3].size == 3);
  const auto ops = ops_of(graph);
  CHECK(ops.count("Cast") == 1);
  CHECK(ops.count("Sigmoid") == 1);
  CHECK(ops.count("Softmax") == 0);
}

TEST_CASE("export refuses an opset it does not write and a family without an emitter", "[onnx]") {
  ltfit::Classifier model = ltfit::make_classifier("resnet18", 2);
  model->eval();
  ltfit::OnnxExportOptions options;
  for (const int opset : {16, 22, 0}) {
    options.opset = opset;
    CHECK_THROWS_WITH(ltfit::onnx_graph_of(*model, ltfit::arch_info("resnet18"), 2, options),
                      Contains("--opset " + std::to_string(opset)) && Contains("opsets 17 to 21"));
  }
  options.opset = 17;
  ltfit::ArchInfo no_emitter = ltfit::arch_info("resnet18");
  no_emitter.onnx = {};
  CHECK_THROWS_AS(ltfit::onnx_graph_of(*model, no_emitter, 2, options), ltfit::ConfigError);
  CHECK_THROWS_WITH(ltfit::onnx_graph_of(*model, no_emitter, 2, options),
                    Contains("has no ONNX emitter"));
}

TEST_CASE("every registered arch exports: a graph with each parameter, ending in the logits",
          "[onnx]") {
  ltfit::OnnxExportOptions options;
  options.image_size = 64;
  for (const auto& arch : ltfit::arch_registry()) {
    INFO(arch.name);
    REQUIRE(static_cast<bool>(arch.onnx));
    ltfit::Classifier model = ltfit::make_classifier(arch.name, 3);
    model->eval();
    const auto graph = ltfit::onnx_graph_of(*model, arch, 3, options);
    std::set<std::string> names;
    for (const auto& init : graph.initializers()) names.insert(init.name);
    for (const auto& p : model->named_parameters()) CHECK(names.count(p.key()) == 1);
    CHECK(graph.nodes().back().outputs == std::vector<std::string>{"logits"});
  }
}

// Run by tests/formats/onnx_oracle.sh: builds each case of $LTFIT_ONNX_ORACLE_DIR/cases.json,
// exports it to <id>.onnx and writes ltfit's logits for each of its inputs.
TEST_CASE("ONNX oracle: export the cases and write ltfit's logits", "[.][onnx_oracle]") {
  const char* dir_env = std::getenv("LTFIT_ONNX_ORACLE_DIR");
  REQUIRE(dir_env != nullptr);
  const fs::path dir(dir_env);
  const nlohmann::json cases = nlohmann::json::parse(ltfit::testing::read_file(dir / "cases.json"));
  for (const auto& c : cases) {
    const std::string id = c.at("id");
    INFO(id);
    const auto classes = c.at("classes").get<std::int64_t>();
    ltfit::Classifier model = model_with_statistics(
        c.at("arch"), classes,
        c.at("head") == "fastai" ? ltfit::HeadKind::kFastai : ltfit::HeadKind::kLinear,
        c.at("stem") == "cifar" ? ltfit::Stem::kCifar : ltfit::Stem::kImagenet);
    ltfit::OnnxExportOptions options;
    options.opset = c.at("opset");
    options.image_size = c.at("image_size");
    options.dynamic_size = c.at("dynamic_size");
    options.multi_label = c.at("multi_label");
    options.metadata = {{"arch", c.at("arch").get<std::string>()}};
    if (!c.at("external_data_above").is_null()) {
      options.external_data_above = c.at("external_data_above").get<std::uint64_t>();
    }
    ltfit::export_onnx(*model, ltfit::arch_info(c.at("arch")), classes, options,
                       (dir / (id + ".onnx")).string());
    torch::NoGradGuard no_grad;
    for (const auto& input : c.at("inputs")) {
      const std::string file = input.at("file");
      const auto shape = input.at("shape").get<std::vector<std::int64_t>>();
      const std::string bytes = ltfit::testing::read_file(dir / file);
      const torch::Tensor x =
          torch::from_blob(const_cast<char*>(bytes.data()), shape, torch::kFloat).clone();
      const torch::Tensor logits = model->forward(x).contiguous();
      std::ofstream out(dir / ("out_" + file.substr(3)), std::ios::binary);
      out.write(static_cast<const char*>(logits.data_ptr()), logits.nbytes());
    }
  }
}
