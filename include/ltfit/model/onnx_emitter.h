// Writing a model's forward pass as ONNX nodes (formats/onnx_graph.h), in evaluation form:
// BatchNorm with its running statistics, Dropout and stochastic depth gone.
//
// OnnxEmitter knows the model's modules and tensors by their state-dict paths ("layer1.0.conv1",
// "layer1.0.bn1.running_mean"); each tensor becomes an initializer of that name the first time a
// node uses it, and each node's output is named after the module it comes from. It emits the
// layers every family shares (Conv2d, BatchNorm, Linear, LayerNorm, activations, pooling) and walks
// Sequentials and ModuleLists, handing a module it does not know to the family's `custom` hook.
// A family describes its own graph in its own file (resnet_onnx.cpp, ...): an OnnxFamily of two
// functions, the body's feature map and torchvision's classifier, set in its registry rows
// (arch_registry.h). Not thread-safe.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/nn/module.h>

#include "ltfit/formats/onnx_graph.h"

namespace ltfit {

class ClassifierImpl;

class OnnxEmitter {
 public:
  // A family's emitter for a module type the shared layers do not cover: the module's output,
  // or null when it is not the family's.
  using Custom = std::function<std::optional<std::string>(
      OnnxEmitter&, const std::string& path, torch::nn::Module&, const std::string& x)>;

  // `opset`: the graph's opset (Gelu from 20, the erf form before).
  OnnxEmitter(onnx::Graph& graph, torch::nn::Module& root, int opset, Custom custom = {});

  onnx::Graph& graph() { return graph_; }
  int opset() const { return opset_; }
  // The side of the graph's square input when the export fixes it (nullopt: dynamic height and
  // width); a family whose graph depends on it (ViT's position embeddings) reads it.
  std::optional<std::int64_t> fixed_input_size() const { return fixed_input_size_; }
  void set_fixed_input_size(std::optional<std::int64_t> side) { fixed_input_size_ = side; }

  // The module at `path` ("" the root); an internal error when there is none.
  torch::nn::Module& module(const std::string& path);
  bool has_module(const std::string& path) const { return modules_.count(path) != 0; }
  template <class M>
  M& module_as(const std::string& path) {
    auto* m = dynamic_cast<M*>(&module(path));
    check_module(m != nullptr, path);
    return *m;
  }
  // The parameter or buffer `name` as an initializer of that name (added once); its name.
  std::string tensor(const std::string& name);
  // A constant initializer named after `hint`.
  std::string constant(const std::string& hint, const torch::Tensor& value);

  // The module at `path` on `x`, whatever it is: a shared layer, a Sequential or ModuleList
  // walked child by child, Dropout and Identity skipped, else the family's custom emitter; an
  // ExportError naming the module when none knows it.
  std::string layer(const std::string& path, const std::string& x);

  // Shared layers, read from the module at `path`.
  std::string conv(const std::string& path, const std::string& x);        // Conv2d
  std::string batch_norm(const std::string& path, const std::string& x);  // BatchNorm1d/2d
  // Linear: Gemm on [N,C]; with `last_axis`, MatMul and Add on the last axis of any rank.
  std::string linear(const std::string& path, const std::string& x, bool last_axis = false);
  // LayerNormalization over the last axis with `path`.weight and `path`.bias.
  std::string layer_norm(const std::string& path, double eps, const std::string& x);

  // Operators; `hint` names the output (default: the operator).
  std::string op(const std::string& op, std::vector<std::string> inputs,
                 std::vector<onnx::Attribute> attributes = {}, const std::string& hint = "");
  std::string relu(const std::string& x, const std::string& hint = "");
  std::string silu(const std::string& x, const std::string& hint = "");  // x * sigmoid(x)
  // torch's hardsigmoid, relu6(x + 3) / 6: ONNX HardSigmoid with alpha 1/6, beta 1/2.
  std::string hard_sigmoid(const std::string& x, const std::string& hint = "");
  std::string gelu(const std::string& x, const std::string& hint = "");  // exact (erf)
  std::string transpose(const std::string& x, std::vector<std::int64_t> perm,
                        const std::string& hint = "");
  std::string max_pool(const std::string& x, std::int64_t kernel, std::int64_t stride,
                       std::int64_t padding, const std::string& hint = "");
  std::string global_average_pool(const std::string& x, const std::string& hint = "");
  std::string flatten(const std::string& x, const std::string& hint = "");  // [N,...] -> [N,C]

 private:
  void check_module(bool ok, const std::string& path) const;

  onnx::Graph& graph_;
  int opset_;
  std::optional<std::int64_t> fixed_input_size_;
  Custom custom_;
  std::map<std::string, std::shared_ptr<torch::nn::Module>> modules_;
  std::map<std::string, torch::Tensor> tensors_;
};

// How a family's model becomes ONNX (arch_registry.h's ArchInfo::onnx): its feature map, and
// torchvision's classifier on it (HeadKind::kLinear; the fastai head is shared). Empty functions:
// the family has no emitter, and export refuses it with a message.
struct OnnxFamily {
  std::function<std::string(OnnxEmitter&, ClassifierImpl&, const std::string& input)> features;
  std::function<std::string(OnnxEmitter&, ClassifierImpl&, const std::string& maps)> linear_head;
  OnnxEmitter::Custom custom;  // the family's own module types (blocks, its norm layers)
  explicit operator bool() const { return features && linear_head; }
};

}  // namespace ltfit
