// The EfficientNet family as ONNX (efficientnet.h, onnx_emitter.h): Conv-BN-SiLU blocks,
// squeeze-excitation, MBConv residuals (stochastic depth gone) and torchvision's classifier (its
// Dropout gone).
#include "ltfit/model/efficientnet.h"

namespace ltfit {
namespace {

std::optional<std::string> efficientnet_module(OnnxEmitter& e, const std::string& path,
                                               torch::nn::Module& m, const std::string& x) {
  if (auto* se = dynamic_cast<SqueezeExcitationImpl*>(&m)) {
    return squeeze_excitation_onnx(e, path, *se, x);
  }
  if (auto* block = dynamic_cast<MBConvImpl*>(&m)) {
    const std::string out = e.layer(path + ".block", x);
    return block->has_residual() ? e.op("Add", {out, x}, {}, path + ".add") : out;
  }
  if (dynamic_cast<StochasticDepthImpl*>(&m) != nullptr) return x;
  return std::nullopt;
}

}  // namespace

std::string squeeze_excitation_onnx(OnnxEmitter& e, const std::string& path,
                                    const SqueezeExcitationImpl& se, const std::string& x) {
  std::string scale = e.conv(path + ".fc1", e.global_average_pool(x, path + ".avgpool"));
  scale = se.activations() == SqueezeActivations::kSiluSigmoid
              ? e.silu(scale, path + ".activation")
              : e.relu(scale, path + ".activation");
  scale = e.conv(path + ".fc2", scale);
  scale = se.activations() == SqueezeActivations::kReluHardsigmoid
              ? e.hard_sigmoid(scale, path + ".scale_activation")
              : e.op("Sigmoid", {scale}, {}, path + ".scale_activation");
  return e.op("Mul", {scale, x}, {}, path + ".scale");
}

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
