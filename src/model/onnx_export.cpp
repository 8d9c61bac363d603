// A trained classifier as an ONNX model (onnx_export.h).
#include "ltfit/model/onnx_export.h"

#include <torch/torch.h>

#include "ltfit/util/error.h"

namespace ltfit {
namespace {

// The graph input, and the normalised float [N,3,H,W] it becomes.
std::string add_input(OnnxEmitter& e, const ClassifierImpl& model,
                      const OnnxExportOptions& options) {
  using onnx::Dim;
  const Dim height = options.dynamic_size ? Dim::dynamic("height") : Dim::fixed(options.image_size);
  const Dim width = options.dynamic_size ? Dim::dynamic("width") : Dim::fixed(options.image_size);
  if (!options.preprocess) {
    e.graph().add_input(kOnnxInput, onnx::ElementType::kFloat,
                        {Dim::dynamic("batch"), Dim::fixed(3), height, width});
    return kOnnxInput;
  }
  e.graph().add_input(kOnnxImage, onnx::ElementType::kUint8,
                      {Dim::dynamic("batch"), height, width, Dim::fixed(3)});
  // (pixel - 255·mean) · 1/(255·std) in float32, as the loader computes it (loader_parts.cpp).
  const ImageNormalization& n = model.input_normalization();
  std::vector<float> offset(3), scale(3);
  for (int c = 0; c < 3; ++c) {
    offset[c] = n.mean[c] * 255.f;
    scale[c] = 1.f / (n.std[c] * 255.f);
  }
  const std::string pixels =
      e.op("Cast", {kOnnxImage}, {{"to", static_cast<std::int64_t>(onnx::ElementType::kFloat)}},
           "preprocess.cast");
  const std::string centred =
      e.op("Sub", {pixels, e.constant("preprocess.offset", torch::tensor(offset))}, {},
           "preprocess.sub");
  const std::string scaled = e.op(
      "Mul", {centred, e.constant("preprocess.scale", torch::tensor(scale))}, {}, "preprocess.mul");
  return e.transpose(scaled, {0, 3, 1, 2}, "preprocess.nchw");
}

// fastai's head: [max, avg] pooled and flattened (a map; a token as it is), BN, Linear, ReLU, BN,
// Linear (Dropout gone).
std::string fastai_head(OnnxEmitter& e, const ClassifierImpl& model, const std::string& maps) {
  std::string in = maps;
  if (model.feature_layout() == FeatureLayout::kMap) {
    const std::string pooled = e.op("Concat",
                                    {e.op("GlobalMaxPool", {maps}, {}, "head.maxpool"),
                                     e.global_average_pool(maps, "head.avgpool")},
                                    {{"axis", std::int64_t{1}}}, "head.concat_pool");
    in = e.flatten(pooled, "head.flatten");
  }
  std::string out = e.batch_norm("head.0", in);
  out = e.relu(e.linear("head.2", out), "head.3");
  return e.linear("head.6", e.batch_norm("head.4", out));
}

}  // namespace

void check_onnx_opset(int opset) {
  if (opset >= onnx::kMinOpset && opset <= onnx::kMaxOpset) return;
  throw ConfigError("--opset " + std::to_string(opset) + ": ltfit writes ONNX opsets " +
                        std::to_string(onnx::kMinOpset) + " to " + std::to_string(onnx::kMaxOpset),
                    "leave --opset out for " + std::to_string(onnx::kMinOpset) +
                        ", which every current ONNX runtime reads");
}

onnx::Graph onnx_graph_of(ClassifierImpl& model, const ArchInfo& arch, std::int64_t classes,
                          const OnnxExportOptions& options) {
  if (!arch.onnx) {
    throw ConfigError("export --format onnx: the " + arch.family + " family (model.arch " +
                          arch.name + ") has no ONNX emitter yet",
                      "export its weights with --format pth, or add the family's emitter "
                      "(docs/architecture.md, \"Where to add X\")");
  }
  check_onnx_opset(options.opset);
  torch::NoGradGuard no_grad;
  onnx::Graph graph(arch.name);
  OnnxEmitter e(graph, model, options.opset, arch.onnx.custom);
  if (!options.dynamic_size) e.set_fixed_input_size(options.image_size);
  const std::string maps = arch.onnx.features(e, model, add_input(e, model, options));
  const std::string head =
      model.has_fastai_head() ? fastai_head(e, model, maps) : arch.onnx.linear_head(e, model, maps);
  graph.add_node("Identity", {head}, {kOnnxLogits});
  using onnx::Dim;
  graph.add_output(kOnnxLogits, onnx::ElementType::kFloat,
                   {Dim::dynamic("batch"), Dim::fixed(classes)});
  if (options.probabilities) {
    const std::string scaled =
        e.op("Div",
             {kOnnxLogits,
              e.constant("temperature", torch::tensor(static_cast<float>(options.temperature)))},
             {}, "logits.scaled");
    if (options.multi_label) {
      graph.add_node("Sigmoid", {scaled}, {kOnnxProbabilities});
    } else {
      graph.add_node("Softmax", {scaled}, {kOnnxProbabilities}, {{"axis", std::int64_t{1}}});
    }
    graph.add_output(kOnnxProbabilities, onnx::ElementType::kFloat,
                     {Dim::dynamic("batch"), Dim::fixed(classes)});
  }
  return graph;
}

onnx::WrittenModel export_onnx(ClassifierImpl& model, const ArchInfo& arch, std::int64_t classes,
                               const OnnxExportOptions& options, const std::string& path) {
  const onnx::Graph graph = onnx_graph_of(model, arch, classes, options);
  onnx::ModelInfo info;
  info.opset = options.opset;
  info.producer_version = options.producer_version;
  info.doc = options.doc;
  info.metadata = options.metadata;
  info.external_data_above = options.external_data_above;
  return onnx::write_onnx_model(graph, info, path);
}

}  // namespace ltfit
