// Reading and writing PyTorch state-dict files (`torch.save` zip archives) without Python.
//
// Reads what torchvision publishes (resnet18-f37072fd.pth, ...): a zip holding `data.pkl`, a
// pickled `collections.OrderedDict` (with a `_metadata` attribute) of tensors rebuilt through
// `torch._utils._rebuild_tensor_v2` from persistent storages (`data/<key>` records), storages of
// any dtype, shared between tensors, with offsets and strides. Writes the same format so that
// Python's `torch.load` and torchvision's `load_state_dict` read ltfit's exports. Reading is
// data only and bounded (torch_archive.h): the tensors returned are views of the file's storages
// (possibly strided or overlapping), never materialised; whoever copies one into a parameter
// checks its shape first. Errors throw CheckpointError naming the file (exit 4). Thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

namespace ltfit {

// Name -> tensor, in file order.
using StateDict = std::vector<std::pair<std::string, torch::Tensor>>;

// Reads a `torch.save` zip state dict. Throws CheckpointError for: a missing file, not a zip,
// truncated, the legacy pre-1.6 format (says to re-save it with a current torch), a pickle that
// is not a (possibly nested under "state_dict"/"model") mapping of names to tensors, a
// TorchScript archive, a global outside the allow-list, a CRC mismatch, a file over its limits.
StateDict read_torch_state_dict(const std::string& path);

// Reads a weight file in either format ltfit knows, told apart by its content: a torch.save zip
// (as read_torch_state_dict) or a safetensors file (formats/safetensors.h; timm's and Hugging
// Face's format; F16 and BF16 tensors are converted where they are copied into a model). Throws
// CheckpointError naming the file for anything else, and for everything either reader refuses.
StateDict read_weights_file(const std::string& path);

// Writes `state` as a `torch.save` zip (OrderedDict of tensors), atomically (temp + rename). A
// write failure (a full disk) throws RuntimeError (exit 5), leaving no partial file.
void write_torch_state_dict(const std::string& path, const StateDict& state);

}  // namespace ltfit
