// The ConvNeXt family as ONNX (convnext.h, onnx_emitter.h): LayerNorm2d as LayerNormalization
// between two transposes, each CNBlock's depthwise conv, LayerNorm, MLP (exact GELU) and layer
// scale (stochastic depth gone), and torchvision's classifier.
#include <torch/nn/modules/normalization.h>

#include "ltfit/model/convnext.h"

namespace ltfit {
namespace {

const std::vector<std::int64_t> kToChannelsLast{0, 2, 3, 1};
const std::vector<std::int64_t> kToChannelsFirst{0, 3, 1, 2};

std::string layer_norm_2d(OnnxEmitter& e, const std::string& path, double eps,
                          const std::string& x) {
  const std::string nhwc = e.transpose(x, kToChannelsLast, path + ".nhwc");
  return e.transpose(e.layer_norm(path, eps, nhwc), kToChannelsFirst, path + ".nchw");
}

// block: Conv 7x7 depthwise, [N,H,W,C], LayerNorm, Linear, GELU, Linear, [N,C,H,W]; then
// layer_scale * block(x) + x.
std::string cn_block(OnnxEmitter& e, const std::string& path, const std::string& x) {
  const std::string b = path + ".block";
  std::string out = e.transpose(e.conv(b + ".0", x), kToChannelsLast, b + ".1");
  const double eps = e.module_as<torch::nn::LayerNormImpl>(b + ".2").options.eps();
  out = e.layer_norm(b + ".2", eps, out);
  out = e.linear(b + ".5", e.gelu(e.linear(b + ".3", out, /*last_axis=*/true), b + ".4"),
                 /*last_axis=*/true);
  out = e.transpose(out, kToChannelsFirst, b + ".6");
  out = e.op("Mul", {e.tensor(path + ".layer_scale"), out}, {}, path + ".layer_scale");
  return e.op("Add", {out, x}, {}, path + ".add");
}

std::optional<std::string> convnext_module(OnnxEmitter& e, const std::string& path,
                                           torch::nn::Module& m, const std::string& x) {
  if (auto* norm = dynamic_cast<LayerNorm2dImpl*>(&m))
    return layer_norm_2d(e, path, norm->eps(), x);
  if (dynamic_cast<CNBlockImpl*>(&m) != nullptr) return cn_block(e, path, x);
  return std::nullopt;
}

}  // namespace

OnnxFamily convnext_onnx() {
  OnnxFamily family;
  family.custom = convnext_module;
  family.features = [](OnnxEmitter& e, ClassifierImpl&, const std::string& x) {
    return e.layer("features", x);
  };
  family.linear_head = [](OnnxEmitter& e, ClassifierImpl&, const std::string& maps) {
    // average pool, then classifier: LayerNorm2d, Flatten, Linear
    return e.layer("classifier", e.global_average_pool(maps));
  };
  return family;
}

}  // namespace ltfit
