// An ONNX model in memory and its writer (onnx_graph.h).
#include "ltfit/formats/onnx_graph.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <type_traits>

#include "ltfit/util/atomic_file.h"
#include "ltfit/util/error.h"
#include "ltfit_onnx.pb.h"

namespace ltfit::onnx {
namespace {

namespace fs = std::filesystem;
namespace pb = ::ltfit::onnx_pb;  // the messages generated from proto/ltfit_onnx.proto

// Initializers are the tensors' bytes as they are in memory; ONNX's raw_data is little-endian.
static_assert(std::endian::native == std::endian::little, "ONNX raw data is little-endian");

ElementType element_type_of(const torch::Tensor& tensor) {
  switch (tensor.scalar_type()) {
    case torch::kFloat:
      return ElementType::kFloat;
    case torch::kLong:
      return ElementType::kInt64;
    case torch::kByte:
      return ElementType::kUint8;
    default:
      LTFIT_CHECK(false, std::string("an ONNX initializer of an unsupported dtype: ") +
                             std::string(c10::toString(tensor.scalar_type())));
  }
  return ElementType::kFloat;
}

void fill_value_info(const Graph::ValueInfo& info, pb::ValueInfoProto& out) {
  out.set_name(info.name);
  pb::TypeProto_Tensor* tensor = out.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(static_cast<int>(info.type));
  pb::TensorShapeProto* shape = tensor->mutable_shape();
  for (const Dim& dim : info.shape) {
    pb::TensorShapeProto_Dimension* d = shape->add_dim();
    if (dim.name.empty()) {
      d->set_dim_value(dim.size);
    } else {
      d->set_dim_param(dim.name);
    }
  }
}

void fill_attribute(const Attribute& attribute, pb::AttributeProto& out) {
  out.set_name(attribute.name);
  std::visit(
      [&](const auto& value) {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, std::int64_t>) {
          out.set_type(pb::AttributeProto_AttributeType_INT);
          out.set_i(value);
        } else if constexpr (std::is_same_v<T, float>) {
          out.set_type(pb::AttributeProto_AttributeType_FLOAT);
          out.set_f(value);
        } else if constexpr (std::is_same_v<T, std::string>) {
          out.set_type(pb::AttributeProto_AttributeType_STRING);
          out.set_s(value);
        } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
          out.set_type(pb::AttributeProto_AttributeType_INTS);
          for (const auto v : value) out.add_ints(v);
        } else {
          out.set_type(pb::AttributeProto_AttributeType_FLOATS);
          for (const auto v : value) out.add_floats(v);
        }
      },
      attribute.value);
}

// The graph's nodes, inputs and outputs (initializers are added by the caller).
void fill_graph(const Graph& graph, pb::GraphProto& out) {
  out.set_name(graph.name());
  for (const auto& input : graph.inputs()) fill_value_info(input, *out.add_input());
  for (const auto& output : graph.outputs()) fill_value_info(output, *out.add_output());
  for (const auto& node : graph.nodes()) {
    pb::NodeProto* n = out.add_node();
    n->set_op_type(node.op);
    n->set_name(node.outputs.empty() ? node.op : node.outputs.front());
    for (const auto& input : node.inputs) n->add_input(input);
    for (const auto& output : node.outputs) n->add_output(output);
    for (const auto& attribute : node.attributes) fill_attribute(attribute, *n->add_attribute());
  }
}

void add_entry(google::protobuf::RepeatedPtrField<pb::StringStringEntryProto>& entries,
               const std::string& key, const std::string& value) {
  pb::StringStringEntryProto* entry = entries.Add();
  entry->set_key(key);
  entry->set_value(value);
}

// ONNX's external data aligns each tensor's offset (onnx.external_data_helper: 4096 for large
// tensors); any offset is valid, aligned ones let a runtime map the file.
constexpr std::uint64_t kExternalAlignment = 4096;

}  // namespace

void Graph::add_input(const std::string& name, ElementType type, std::vector<Dim> shape) {
  inputs_.push_back({name, type, std::move(shape)});
  used_.insert(std::lower_bound(used_.begin(), used_.end(), name), name);
}

void Graph::add_output(const std::string& name, ElementType type, std::vector<Dim> shape) {
  outputs_.push_back({name, type, std::move(shape)});
}

const std::string& Graph::add_initializer(const std::string& name, const torch::Tensor& tensor) {
  LTFIT_CHECK(!has_initializer(name), "ONNX initializer '" + name + "' given twice");
  const torch::Tensor data = tensor.detach().to(torch::kCPU).contiguous();
  Initializer init{name, element_type_of(data),
                   std::vector<std::int64_t>(data.sizes().begin(), data.sizes().end()),
                   std::string(static_cast<const char*>(data.data_ptr()), data.nbytes())};
  initializer_bytes_ += init.bytes.size();
  initializers_.push_back(std::move(init));
  used_.insert(std::lower_bound(used_.begin(), used_.end(), name), name);
  return initializers_.back().name;
}

bool Graph::has_initializer(const std::string& name) const {
  return std::any_of(initializers_.begin(), initializers_.end(),
                     [&](const Initializer& i) { return i.name == name; });
}

std::string Graph::add_node(const std::string& op, std::vector<std::string> inputs,
                            std::vector<std::string> outputs, std::vector<Attribute> attributes) {
  LTFIT_CHECK(!outputs.empty(), "an ONNX node has an output");
  for (const auto& output : outputs) {
    if (!std::binary_search(used_.begin(), used_.end(), output)) {
      used_.insert(std::lower_bound(used_.begin(), used_.end(), output), output);
    }
  }
  nodes_.push_back({op, std::move(inputs), std::move(outputs), std::move(attributes)});
  return nodes_.back().outputs.front();
}

std::string Graph::fresh(const std::string& hint) {
  std::string name = hint;
  for (int n = 2; std::binary_search(used_.begin(), used_.end(), name); ++n) {
    name = hint + "_" + std::to_string(n);
  }
  used_.insert(std::lower_bound(used_.begin(), used_.end(), name), name);
  return name;
}

int ir_version_for_opset(int opset) {
  LTFIT_CHECK(opset >= kMinOpset && opset <= kMaxOpset, "an opset ltfit writes");
  return opset <= 18 ? 8 : opset <= 20 ? 9 : 10;
}

WrittenModel write_onnx_model(const Graph& graph, const ModelInfo& info, const std::string& path) {
  pb::ModelProto model;
  model.set_ir_version(ir_version_for_opset(info.opset));
  model.set_producer_name("ltfit");
  model.set_producer_version(info.producer_version);
  model.set_doc_string(info.doc);
  pb::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(info.opset);
  for (const auto& [key, value] : info.metadata)
    add_entry(*model.mutable_metadata_props(), key, value);
  pb::GraphProto* g = model.mutable_graph();
  fill_graph(graph, *g);

  WrittenModel written;
  const bool external = graph.initializer_bytes() > info.external_data_above;
  std::string data;  // the external data file's bytes
  const std::string data_path = path + ".data";
  const std::string data_name = fs::path(data_path).filename().string();
  for (const auto& init : graph.initializers()) {
    pb::TensorProto* t = g->add_initializer();
    t->set_name(init.name);
    t->set_data_type(static_cast<int>(init.type));
    for (const auto d : init.dims) t->add_dims(d);
    if (!external) {
      t->set_raw_data(init.bytes);
      continue;
    }
    data.resize((data.size() + kExternalAlignment - 1) / kExternalAlignment * kExternalAlignment);
    t->set_data_location(pb::TensorProto_DataLocation_EXTERNAL);
    add_entry(*t->mutable_external_data(), "location", data_name);
    add_entry(*t->mutable_external_data(), "offset", std::to_string(data.size()));
    add_entry(*t->mutable_external_data(), "length", std::to_string(init.bytes.size()));
    data += init.bytes;
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    throw RuntimeError("cannot serialize the ONNX model for '" + path +
                       "' (over protobuf's 2 GB message limit?)");
  }
  if (external) {  // the data first: a model file never names data that is not there
    write_file_atomic(data_path, data);
    written.external_data = data_path;
    written.data_bytes = data.size();
  }
  write_file_atomic(path, bytes);
  written.bytes = bytes.size();
  return written;
}

}  // namespace ltfit::onnx
