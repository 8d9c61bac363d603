// The EfficientNet family as ONNX (efficientnet.h, onnx_emitter.h): Conv-BN-SiLU blocks,
// squeeze-excitation, MBConv residuals (stochastic depth gone) and torchvision's classifier (its
// Dropout gone).
#include "ltfit/model/efficientnet.h"

namespace ltfit {
namespace {

std::optional<std::string> efficientnet_module(OnnxEmitter& e, const std::string& path,
                                               torch::nn::Module& m, const std::string& x) {
  if (dynamic_cast<SqueezeExcitationImpl*>(&m) != nullptr) {
    std::string scale = e.global_average_pool(x, path + ".avgpool");
    scale = e.conv(path + ".fc2", e.silu(e.conv(path + ".fc1", scale), path + ".silu"));
    return e.op("Mul", {e.op("Sigmoid", {scale}, {}, path + ".sigmoid"), x}, {}, path + ".scale");
  }
  if (auto* block = dynamic_cast<MBConvImpl*>(&m)) {
    const std::string out = e.layer(path + ".block", x);
    return block->has_residual() ? e.op("Add", {out, x}, {}, path + ".add") : out;
  }
  if (dynamic_cast<StochasticDepthImpl*>(&m) != nullptr) return x;
  return std::nullopt;
}

}  // namespace

OnnxFamily efficientnet_onnx() {
  OnnxFamily family;
  family.custom = efficientnet_module;
  family.features = [](OnnxEmitter& e, ClassifierImpl&, const std::string& x) {
    return e.layer("features", x);
  };
  family.linear_head = [](OnnxEmitter& e, ClassifierImpl&, const std::string& maps) {
    return e.layer("classifier", e.flatten(e.global_average_pool(maps)));  // Dropout, Linear
  };
  return family;
}

}  // namespace ltfit
