// The EfficientNetV2 family as ONNX (efficientnet_v2.h, onnx_emitter.h): FusedMBConv residuals
// (stochastic depth gone), MBConv and squeeze-excitation through efficientnet_onnx()'s emitter,
// torchvision's classifier (its Dropout gone). BatchNorm nodes take each module's eps (1e-3).
#include "ltfit/model/efficientnet_v2.h"

namespace ltfit {
namespace {

// FusedMBConv: its `block` Sequential, plus the input when residual; MBConv, SE and stochastic
// depth are the B0-B3 family's (efficientnet_onnx().custom). Null for any other module.
std::optional<std::string> efficientnet_v2_module(OnnxEmitter& e, const std::string& path,
                                                  torch::nn::Module& m, const std::string& x) {
  if (auto* block = dynamic_cast<FusedMBConvImpl*>(&m)) {
    const std::string out = e.layer(path + ".block", x);
    return block->has_residual() ? e.op("Add", {out, x}, {}, path + ".add") : out;
  }
  static const OnnxEmitter::Custom mbconv = efficientnet_onnx().custom;
  return mbconv(e, path, m, x);
}

}  // namespace

OnnxFamily efficientnet_v2_onnx() {
  OnnxFamily family;
  family.custom = efficientnet_v2_module;
  family.features = [](OnnxEmitter& e, ClassifierImpl&, const std::string& x) {
    return e.layer("features", x);
  };
  family.linear_head = [](OnnxEmitter& e, ClassifierImpl&, const std::string& maps) {
    return e.layer("classifier", e.flatten(e.global_average_pool(maps)));  // Dropout, Linear
  };
  return family;
}

}  // namespace ltfit
