// torch.save state dicts on top of the archive reader/writer (torch_archive.h). Read with ltfit's
// own pickle machine, not LibTorch's torch::pickle_load, which throws on a state dict (an
// OrderedDict): "Expected GenericDict but got None" (LibTorch 2.15.0; see pickle.cpp).
#include "ltfit/model/torch_weights.h"

#include "ltfit/formats/file_bytes.h"
#include "ltfit/formats/safetensors.h"
#include "ltfit/formats/torch_archive.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

constexpr const char* kTorchScriptHint =
    "a TorchScript model is not a state dict; if you trust the file, save its state_dict() with "
    "torch.save in Python";

using Kind = pickle::PickleValue::Kind;
using pickle::PickleValue;

// The mapping of names to tensors: the top-level dict, or its "state_dict" / "model" entry.
const PickleValue& find_state_mapping(const PickleValue& root) {
  if (root.kind != Kind::kDict) {
    throw CheckpointError(std::string("expected a dict of tensors, found a ") +
                          pickle::kind_name(root.kind));
  }
  for (const auto& [key, value] : root.entries) {
    if (key->kind == Kind::kString && (key->text == "state_dict" || key->text == "model") &&
        value->kind == Kind::kDict) {
      return *value;
    }
  }
  return root;
}

StateDict to_state_dict(const PickleValue& root) {
  const PickleValue& mapping = find_state_mapping(root);
  StateDict out;
  for (const auto& [key, value] : mapping.entries) {
    if (key->kind != Kind::kString || value->kind != Kind::kTensor) continue;
    out.emplace_back(key->text, value->tensor);
  }
  if (out.empty() && !mapping.entries.empty()) {
    throw CheckpointError("expected a dict of tensors, found one without tensors");
  }
  return out;
}

std::shared_ptr<const std::string> weight_file_bytes(const std::string& path) {
  try {
    return read_regular_file(path);
  } catch (const std::exception& e) {
    throw CheckpointError("weight file '" + path + "' " + e.what());
  }
}

// The state dict of the torch.save archive `bytes`, read from `path`.
StateDict torch_state_dict(std::shared_ptr<const std::string> bytes, const std::string& path) {
  const ReadLimits limits = default_read_limits(bytes->size());
  const TorchArchive archive =
      load_torch_archive(std::move(bytes), "weight file", path, kTorchScriptHint, limits);
  try {
    return to_state_dict(archive.root());
  } catch (const CheckpointError& e) {
    throw CheckpointError("weight file '" + path + "': " + e.what());
  }
}

}  // namespace

StateDict read_weights_file(const std::string& path) {
  std::shared_ptr<const std::string> bytes = weight_file_bytes(path);
  if (!looks_like_safetensors(*bytes)) return torch_state_dict(std::move(bytes), path);
  try {
    SafetensorsContent content = read_safetensors(*bytes);
    return std::move(content.tensors);
  } catch (const SafetensorsError& e) {
    throw CheckpointError("weight file '" + path + "' (safetensors): " + e.what());
  }
}

StateDict read_torch_state_dict(const std::string& path) {
  return torch_state_dict(weight_file_bytes(path), path);
}

void write_torch_state_dict(const std::string& path, const StateDict& state) {
  TorchArchiveWriter writer;
  pickle::PickleWriter& w = writer.pickle();
  w.global("collections", "OrderedDict");
  w.empty_tuple();
  w.reduce();
  w.mark();
  for (const auto& [name, tensor] : state) {
    w.string(name);
    writer.tensor(tensor);
  }
  w.set_items();
  writer.write_file(path);
}

}  // namespace ltfit
