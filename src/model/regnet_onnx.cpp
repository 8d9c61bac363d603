// The RegNet family as ONNX (regnet.h, onnx_emitter.h): the stem, the residual bottleneck blocks
// (projection shortcut, ReLU squeeze-excitation, ReLU after the sum), average pool and fc.
#include "ltfit/model/regnet.h"

namespace ltfit {
namespace {

// A RegNet module at `path` on `x`: a squeeze-excitation or a residual block; null otherwise (the
// shared Sequential, Conv2d, BatchNorm and ReLU emitters take the rest).
std::optional<std::string> regnet_module(OnnxEmitter& e, const std::string& path,
                                         torch::nn::Module& m, const std::string& x) {
  if (auto* se = dynamic_cast<SqueezeExcitationImpl*>(&m)) {
    return squeeze_excitation_onnx(e, path, *se, x);
  }
  if (auto* block = dynamic_cast<ResBottleneckBlockImpl*>(&m)) {
    const std::string shortcut = block->has_projection() ? e.layer(path + ".proj", x) : x;
    const std::string sum = e.op("Add", {shortcut, e.layer(path + ".f", x)}, {}, path + ".add");
    return e.relu(sum, path + ".activation");
  }
  return std::nullopt;
}

}  // namespace

OnnxFamily regnet_onnx() {
  OnnxFamily family;
  family.custom = regnet_module;
  family.features = [](OnnxEmitter& e, ClassifierImpl&, const std::string& x) {
    return e.layer("trunk_output", e.layer("stem", x));
  };
  family.linear_head = [](OnnxEmitter& e, ClassifierImpl&, const std::string& maps) {
    return e.linear("fc", e.flatten(e.global_average_pool(maps, "avgpool")));
  };
  return family;
}

}  // namespace ltfit
