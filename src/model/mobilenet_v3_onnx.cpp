// The MobileNetV3 family as ONNX (mobilenet_v3.h, onnx_emitter.h): HardSwish (opset 14+),
// squeeze-excitation with ReLU and HardSigmoid, inverted-residual adds and torchvision's
// classifier (Linear, HardSwish, Linear; its Dropout gone).
#include "ltfit/model/mobilenet_v3.h"

namespace ltfit {
namespace {

std::optional<std::string> mobilenet_v3_module(OnnxEmitter& e, const std::string& path,
                                               torch::nn::Module& m, const std::string& x) {
  if (dynamic_cast<HardswishImpl*>(&m) != nullptr) return e.op("HardSwish", {x}, {}, path);
  if (dynamic_cast<HardsigmoidImpl*>(&m) != nullptr) return e.hard_sigmoid(x, path);
  if (auto* se = dynamic_cast<SqueezeExcitationImpl*>(&m)) {
    return squeeze_excitation_onnx(e, path, *se, x);
  }
  if (auto* block = dynamic_cast<MobileNetV3BlockImpl*>(&m)) {
    const std::string out = e.layer(path + ".block", x);
    return block->has_residual() ? e.op("Add", {out, x}, {}, path + ".add") : out;
  }
  return std::nullopt;
}

}  // namespace

OnnxFamily mobilenet_v3_onnx() {
  OnnxFamily family;
  family.custom = mobilenet_v3_module;
  family.features = [](OnnxEmitter& e, ClassifierImpl&, const std::string& x) {
    return e.layer("features", x);
  };
  family.linear_head = [](OnnxEmitter& e, ClassifierImpl&, const std::string& maps) {
    // Linear, HardSwish, Dropout (skipped), Linear
    return e.layer("classifier", e.flatten(e.global_average_pool(maps)));
  };
  return family;
}

}  // namespace ltfit
