// The layers every family shares, as ONNX nodes (onnx_emitter.h).
#include "ltfit/model/onnx_emitter.h"

#include <cmath>
#include <variant>

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/modules/pooling.h>

#include "ltfit/util/error.h"

namespace ltfit {
namespace {

using onnx::Attribute;

// A path's child: "layer1" + "0" -> "layer1.0"; "" + "conv1" -> "conv1".
std::string child_path(const std::string& path, const std::string& name) {
  return path.empty() ? name : path + "." + name;
}

std::vector<std::int64_t> ints(const torch::ExpandingArray<2>& values) {
  return {values->begin(), values->end()};
}

// Conv2d's padding as ONNX's begin and end pads (the families use explicit padding, never "same"
// or "valid").
std::vector<std::int64_t> conv_pads(const torch::nn::detail::ConvNdOptions<2>& options,
                                    const std::string& path) {
  const auto* pads = std::get_if<torch::ExpandingArray<2>>(&options.padding());
  LTFIT_CHECK(pads != nullptr, "ONNX export: " + path + " has a 'same' or 'valid' padding");
  const std::vector<std::int64_t> p = ints(*pads);
  return {p[0], p[1], p[0], p[1]};
}

}  // namespace

OnnxEmitter::OnnxEmitter(onnx::Graph& graph, torch::nn::Module& root, int opset, Custom custom)
    : graph_(graph), opset_(opset), custom_(std::move(custom)) {
  for (const auto& item : root.named_modules("", /*include_self=*/false)) {
    modules_[item.key()] = item.value();
  }
  for (const auto& p : root.named_parameters()) tensors_[p.key()] = p.value();
  for (const auto& b : root.named_buffers()) tensors_[b.key()] = b.value();
}

void OnnxEmitter::check_module(bool ok, const std::string& path) const {
  LTFIT_CHECK(ok, "ONNX export: no module of the expected kind at '" + path + "'");
}

torch::nn::Module& OnnxEmitter::module(const std::string& path) {
  const auto found = modules_.find(path);
  check_module(found != modules_.end(), path);
  return *found->second;
}

std::string OnnxEmitter::tensor(const std::string& name) {
  if (graph_.has_initializer(name)) return name;
  const auto found = tensors_.find(name);
  LTFIT_CHECK(found != tensors_.end(), "ONNX export: the model has no tensor '" + name + "'");
  return graph_.add_initializer(name, found->second.detach().to(torch::kFloat));
}

std::string OnnxEmitter::constant(const std::string& hint, const torch::Tensor& value) {
  return graph_.add_initializer(graph_.fresh(hint), value);
}

std::string OnnxEmitter::op(const std::string& op, std::vector<std::string> inputs,
                            std::vector<Attribute> attributes, const std::string& hint) {
  return graph_.add_node(op, std::move(inputs), {graph_.fresh(hint.empty() ? op : hint)},
                         std::move(attributes));
}

std::string OnnxEmitter::conv(const std::string& path, const std::string& x) {
  auto& c = module_as<torch::nn::Conv2dImpl>(path);
  const auto& o = c.options;
  std::vector<std::string> inputs{x, tensor(path + ".weight")};
  if (o.bias()) inputs.push_back(tensor(path + ".bias"));
  return op("Conv", std::move(inputs),
            {{"kernel_shape", ints(o.kernel_size())},
             {"strides", ints(o.stride())},
             {"pads", conv_pads(o, path)},
             {"dilations", ints(o.dilation())},
             {"group", o.groups()}},
            path);
}

std::string OnnxEmitter::batch_norm(const std::string& path, const std::string& x) {
  torch::nn::Module& m = module(path);
  double eps = 0.0;
  bool two_d = false;
  if (auto* bn = dynamic_cast<torch::nn::BatchNorm2dImpl*>(&m)) {
    eps = bn->options.eps();
  } else {
    auto* bn1 = dynamic_cast<torch::nn::BatchNorm1dImpl*>(&m);
    check_module(bn1 != nullptr, path);
    eps = bn1->options.eps();
    two_d = true;  // [N,C]: BatchNormalization wants [N,C,D...], so [N,C,1] and back
  }
  std::string in = x;
  if (two_d) {
    in = op("Unsqueeze", {x, constant("axis_2", torch::tensor({2}, torch::kLong))}, {},
            path + ".unsqueeze");
  }
  std::string out = op("BatchNormalization",
                       {in, tensor(path + ".weight"), tensor(path + ".bias"),
                        tensor(path + ".running_mean"), tensor(path + ".running_var")},
                       {{"epsilon", static_cast<float>(eps)}}, path);
  if (two_d) {
    out = op("Squeeze", {out, constant("axis_2", torch::tensor({2}, torch::kLong))}, {},
             path + ".squeeze");
  }
  return out;
}

std::string OnnxEmitter::linear(const std::string& path, const std::string& x, bool last_axis) {
  auto& l = module_as<torch::nn::LinearImpl>(path);
  const bool bias = l.options.bias();
  if (!last_axis) {
    std::vector<std::string> inputs{x, tensor(path + ".weight")};
    if (bias) inputs.push_back(tensor(path + ".bias"));
    return op("Gemm", std::move(inputs), {{"transB", std::int64_t{1}}}, path);
  }
  // [..., in] x [in, out]: the weight [out, in] transposed (a runtime folds it once).
  const std::string w_t = op("Transpose", {tensor(path + ".weight")},
                             {{"perm", std::vector<std::int64_t>{1, 0}}}, path + ".weight_t");
  std::string out = op("MatMul", {x, w_t}, {}, bias ? path + ".matmul" : path);
  if (bias) out = op("Add", {out, tensor(path + ".bias")}, {}, path);
  return out;
}

std::string OnnxEmitter::layer_norm(const std::string& path, double eps, const std::string& x) {
  return op("LayerNormalization", {x, tensor(path + ".weight"), tensor(path + ".bias")},
            {{"axis", std::int64_t{-1}}, {"epsilon", static_cast<float>(eps)}}, path);
}

std::string OnnxEmitter::relu(const std::string& x, const std::string& hint) {
  return op("Relu", {x}, {}, hint);
}

std::string OnnxEmitter::silu(const std::string& x, const std::string& hint) {
  const std::string name = hint.empty() ? "silu" : hint;
  return op("Mul", {x, op("Sigmoid", {x}, {}, name + ".sigmoid")}, {}, name);
}

std::string OnnxEmitter::hard_sigmoid(const std::string& x, const std::string& hint) {
  constexpr float kAlpha = 1.0f / 6.0f;  // max(0, min(1, alpha x + beta))
  constexpr float kBeta = 0.5f;
  return op("HardSigmoid", {x}, {{"alpha", kAlpha}, {"beta", kBeta}}, hint);
}

std::string OnnxEmitter::gelu(const std::string& x, const std::string& hint) {
  const std::string name = hint.empty() ? "gelu" : hint;
  if (opset_ >= 20) return op("Gelu", {x}, {{"approximate", std::string("none")}}, name);
  // 0.5 x (1 + erf(x / sqrt 2)), as torch.nn.GELU() computes it.
  const std::string erf =
      op("Erf",
         {op("Div", {x, constant("sqrt_2", torch::tensor(std::sqrt(2.0f)))}, {}, name + ".div")},
         {}, name + ".erf");
  const std::string one_plus =
      op("Add", {erf, constant("one", torch::tensor(1.0f))}, {}, name + ".add");
  return op("Mul",
            {op("Mul", {x, one_plus}, {}, name + ".mul"), constant("half", torch::tensor(0.5f))},
            {}, name);
}

std::string OnnxEmitter::transpose(const std::string& x, std::vector<std::int64_t> perm,
                                   const std::string& hint) {
  return op("Transpose", {x}, {{"perm", std::move(perm)}}, hint);
}

std::string OnnxEmitter::max_pool(const std::string& x, std::int64_t kernel, std::int64_t stride,
                                  std::int64_t padding, const std::string& hint) {
  return op("MaxPool", {x},
            {{"kernel_shape", std::vector<std::int64_t>{kernel, kernel}},
             {"strides", std::vector<std::int64_t>{stride, stride}},
             {"pads", std::vector<std::int64_t>{padding, padding, padding, padding}}},
            hint.empty() ? "maxpool" : hint);
}

std::string OnnxEmitter::global_average_pool(const std::string& x, const std::string& hint) {
  return op("GlobalAveragePool", {x}, {}, hint.empty() ? "avgpool" : hint);
}

std::string OnnxEmitter::flatten(const std::string& x, const std::string& hint) {
  return op("Flatten", {x}, {{"axis", std::int64_t{1}}}, hint.empty() ? "flatten" : hint);
}

std::string OnnxEmitter::layer(const std::string& path, const std::string& x) {
  torch::nn::Module& m = module(path);
  if (custom_) {
    if (auto out = custom_(*this, path, m, x)) return *out;
  }
  if (dynamic_cast<torch::nn::SequentialImpl*>(&m) != nullptr ||
      dynamic_cast<torch::nn::ModuleListImpl*>(&m) != nullptr) {
    std::string out = x;
    for (const auto& child : m.named_children()) out = layer(child_path(path, child.key()), out);
    return out;
  }
  if (dynamic_cast<torch::nn::Conv2dImpl*>(&m)) return conv(path, x);
  if (dynamic_cast<torch::nn::BatchNorm2dImpl*>(&m) ||
      dynamic_cast<torch::nn::BatchNorm1dImpl*>(&m)) {
    return batch_norm(path, x);
  }
  if (dynamic_cast<torch::nn::LinearImpl*>(&m)) return linear(path, x);
  if (dynamic_cast<torch::nn::ReLUImpl*>(&m)) return relu(x, path);
  if (dynamic_cast<torch::nn::SiLUImpl*>(&m)) return silu(x, path);
  if (dynamic_cast<torch::nn::GELUImpl*>(&m)) return gelu(x, path);
  if (dynamic_cast<torch::nn::FlattenImpl*>(&m)) return flatten(x, path);
  if (dynamic_cast<torch::nn::DropoutImpl*>(&m) || dynamic_cast<torch::nn::IdentityImpl*>(&m)) {
    return x;  // evaluation form: nothing to do
  }
  LTFIT_CHECK(false, "ONNX export: no emitter for module '" + path + "' (" + m.name() + ")");
  return x;
}

}  // namespace ltfit
