// The ResNet family as ONNX (resnet.h, onnx_emitter.h): torchvision's or the CIFAR stem, the
// residual blocks (basic or bottleneck, with their downsample), average pool and fc.
#include "ltfit/model/resnet.h"

namespace ltfit {
namespace {

// One ResidualBlock at `path` on `x`.
std::optional<std::string> residual_block(OnnxEmitter& e, const std::string& path,
                                          torch::nn::Module& m, const std::string& x) {
  if (dynamic_cast<ResidualBlockImpl*>(&m) == nullptr) return std::nullopt;
  std::string out =
      e.relu(e.batch_norm(path + ".bn1", e.conv(path + ".conv1", x)), path + ".relu1");
  out = e.batch_norm(path + ".bn2", e.conv(path + ".conv2", out));
  if (e.has_module(path + ".conv3")) {  // a bottleneck
    out = e.batch_norm(path + ".bn3", e.conv(path + ".conv3", e.relu(out, path + ".relu2")));
  }
  const std::string identity =
      e.has_module(path + ".downsample") ? e.layer(path + ".downsample", x) : x;
  return e.relu(e.op("Add", {out, identity}, {}, path + ".add"), path + ".relu");
}

}  // namespace

OnnxFamily resnet_onnx() {
  OnnxFamily family;
  family.custom = residual_block;
  family.features = [](OnnxEmitter& e, ClassifierImpl& model, const std::string& x) {
    const bool cifar_stem = dynamic_cast<ResNetImpl&>(model).cifar_stem();
    std::string out = e.relu(e.batch_norm("bn1", e.conv("conv1", x)), "relu");
    if (!cifar_stem) out = e.max_pool(out, 3, 2, 1, "maxpool");
    for (const char* stage : {"layer1", "layer2", "layer3", "layer4"}) out = e.layer(stage, out);
    return out;
  };
  family.linear_head = [](OnnxEmitter& e, ClassifierImpl&, const std::string& maps) {
    return e.linear("fc", e.flatten(e.global_average_pool(maps)));
  };
  return family;
}

}  // namespace ltfit
