// A trained classifier as an ONNX model (formats/onnx_graph.h): its family's graph (ArchInfo::onnx)
// and the fastai head or torchvision's classifier, in evaluation form, with a dynamic batch axis,
// optionally dynamic height and width, optional probabilities and optional preprocessing.
// Not thread-safe (reads the model's tensors).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ltfit/formats/onnx_graph.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/model/classifier.h"

namespace ltfit {

struct OnnxExportOptions {
  int opset = 17;                 // onnx::kMinOpset .. onnx::kMaxOpset
  std::int64_t image_size = 224;  // the eval size: the input's height and width
  bool dynamic_size = false;      // height and width as named dynamic axes
  // A second output `probabilities`: softmax(logits / temperature), or sigmoid for multi-label.
  bool probabilities = false;
  bool multi_label = false;
  double temperature = 1.0;
  // The input is uint8 [N,H,W,3] RGB (the decoded, resized pixels), normalised inside the graph
  // as ltfit's loader does: (pixel - 255·mean) · 1/(255·std); else float [N,3,H,W], normalised.
  bool preprocess = false;
  std::vector<std::pair<std::string, std::string>> metadata;  // metadata_props
  std::string producer_version;
  std::string doc;
  std::uint64_t external_data_above = onnx::ModelInfo{}.external_data_above;
};

// The names of the graph's inputs and outputs.
inline constexpr const char* kOnnxInput = "input";    // float [N,3,H,W]
inline constexpr const char* kOnnxImage = "image";    // uint8 [N,H,W,3], with preprocess
inline constexpr const char* kOnnxLogits = "logits";  // float [N,classes]
inline constexpr const char* kOnnxProbabilities = "probabilities";

// ConfigError (exit 2) naming --opset unless onnx::kMinOpset <= opset <= onnx::kMaxOpset.
void check_onnx_opset(int opset);

// Builds `model`'s graph (`arch` its registry row, `classes` its outputs) in evaluation form.
// ConfigError (exit 2) when the family has no ONNX emitter or the opset is not one ltfit writes.
onnx::Graph onnx_graph_of(ClassifierImpl& model, const ArchInfo& arch, std::int64_t classes,
                          const OnnxExportOptions& options);

// onnx_graph_of, written to `path` (onnx::write_onnx_model).
onnx::WrittenModel export_onnx(ClassifierImpl& model, const ArchInfo& arch, std::int64_t classes,
                               const OnnxExportOptions& options, const std::string& path);

}  // namespace ltfit
