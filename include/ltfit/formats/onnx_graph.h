// An ONNX model built in memory and written as the ONNX format (onnx/onnx.proto, through our own
// proto/ltfit_onnx.proto with the spec's field numbers), for `ltfit export --format onnx`.
//
// A Graph holds typed inputs and outputs, nodes (an operator of the default domain with its
// attributes) and initializers (weights copied from tensors as little-endian float32, int64 or
// uint8 raw data). Value names are the caller's: initializers keep their state-dict names
// ("layer1.0.conv1.weight"), other values get unique names from `fresh`. write_onnx_model writes
// the file atomically (a temporary file renamed into place, so a failure leaves nothing behind);
// a model whose weights would pass protobuf's 2 GB message limit keeps its initializers in ONNX's
// external data, one file beside the model (`<out>.data`), as onnx.save_model does. Not
// thread-safe; one Graph per export.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <torch/types.h>

namespace ltfit::onnx {

// The element types ltfit writes (TensorProto.DataType's numbers).
enum class ElementType : int { kFloat = 1, kUint8 = 2, kInt64 = 7 };

// One axis of an input or output: a fixed size, or a named dynamic one ("batch").
struct Dim {
  std::int64_t size = 0;  // used when `name` is empty
  std::string name;
  static Dim fixed(std::int64_t size) { return {size, ""}; }
  static Dim dynamic(std::string name) { return {0, std::move(name)}; }
};

// A node attribute: an int, a float, a string, or a list of ints or floats.
struct Attribute {
  std::string name;
  std::variant<std::int64_t, float, std::string, std::vector<std::int64_t>, std::vector<float>>
      value;
};

class Graph {
 public:
  explicit Graph(std::string name) : name_(std::move(name)) {}

  // A graph input or output with its element type and shape.
  void add_input(const std::string& name, ElementType type, std::vector<Dim> shape);
  void add_output(const std::string& name, ElementType type, std::vector<Dim> shape);
  // An initializer named `name` holding `tensor` (float32, int64 or uint8; copied to the CPU,
  // contiguous); returns `name`. A name already given is an internal error.
  const std::string& add_initializer(const std::string& name, const torch::Tensor& tensor);
  bool has_initializer(const std::string& name) const;
  // A node `op` on `inputs` ("" for an optional input left out) with `outputs`; returns the
  // first output. The node's name is its first output's.
  std::string add_node(const std::string& op, std::vector<std::string> inputs,
                       std::vector<std::string> outputs, std::vector<Attribute> attributes = {});
  // A value name not used yet: "<hint>", else "<hint>_2", "<hint>_3", ...
  std::string fresh(const std::string& hint);

  // What the graph holds, for the writer and the tests.
  struct ValueInfo {
    std::string name;
    ElementType type;
    std::vector<Dim> shape;
  };
  struct Node {
    std::string op;
    std::vector<std::string> inputs, outputs;
    std::vector<Attribute> attributes;
  };
  struct Initializer {
    std::string name;
    ElementType type;
    std::vector<std::int64_t> dims;
    std::string bytes;  // little-endian raw data
  };
  const std::string& name() const { return name_; }
  const std::vector<ValueInfo>& inputs() const { return inputs_; }
  const std::vector<ValueInfo>& outputs() const { return outputs_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Initializer>& initializers() const { return initializers_; }
  // Bytes of all initializers' data.
  std::uint64_t initializer_bytes() const { return initializer_bytes_; }

 private:
  std::string name_;
  std::vector<ValueInfo> inputs_, outputs_;
  std::vector<Node> nodes_;
  std::vector<Initializer> initializers_;
  std::vector<std::string> used_;  // every value name given out, sorted
  std::uint64_t initializer_bytes_ = 0;
};

// The model around a graph.
struct ModelInfo {
  int opset = 17;                                             // the default domain's opset
  std::string producer_version;                               // ltfit's version
  std::string doc;                                            // doc_string, in words
  std::vector<std::pair<std::string, std::string>> metadata;  // metadata_props, in order
  // Initializer bytes beyond which the weights go to external data (protobuf refuses messages
  // over 2 GB); tests lower it.
  std::uint64_t external_data_above = 1'800'000'000ull;
};

// The opsets write_onnx_model accepts, and the IR version each needs (17 and 18: 8, 19 and 20: 9,
// 21: 10).
constexpr int kMinOpset = 17;
constexpr int kMaxOpset = 21;
int ir_version_for_opset(int opset);

// What write_onnx_model wrote.
struct WrittenModel {
  std::uint64_t bytes = 0;       // the model file's size
  std::string external_data;     // the external data file's path; "" when the weights are inline
  std::uint64_t data_bytes = 0;  // its size
};

// Serializes `graph` with `info` to `path` (and `<path>.data` for external data), atomically.
// RuntimeError (exit 5) naming the file when it cannot be written; an opset outside
// [kMinOpset, kMaxOpset] is the caller's to refuse first (LTFIT_CHECK here).
WrittenModel write_onnx_model(const Graph& graph, const ModelInfo& info, const std::string& path);

}  // namespace ltfit::onnx
