// torch.save archives (a zip holding `data.pkl` and `data/<key>` storage records), read as data
// only and written so that Python's `torch.load(path, weights_only=True)` reads them.
//
// Reading has the semantics of torch.load(weights_only=True): the pickle may name only an
// allow-list of globals (collections.OrderedDict, the tensor rebuild functions, storage types,
// torch.nn.parameter.Parameter); anything else is refused, and nothing in a file is ever run. A
// TorchScript archive (`constants.pkl`, `code/`; ltfit's checkpoints before format 3) is
// recognised from its record names and refused before anything is unpickled. Tensors are views
// of the storages, which come only from the archive's records and alias the file's bytes (no
// copy, no materialised strided view: a stride-0 view claiming gigabytes costs nothing); a view
// must lie inside its storage. Every record's CRC-32 is checked, and everything the reader
// allocates is bounded by ReadLimits (read_limits.h). Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <torch/types.h>

#include "ltfit/formats/pickle.h"
#include "ltfit/util/read_limits.h"

namespace ltfit {

namespace zip {
class ByteSink;
}  // namespace zip

// The file is a TorchScript archive: loading it would compile and run code stored in it.
class TorchScriptArchiveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An archive read into memory: the unpickled tree, whose tensors view the file's bytes.
class TorchArchive {
 public:
  TorchArchive(std::shared_ptr<const std::string> bytes, std::unique_ptr<pickle::Unpickled> tree,
               std::uint64_t bytes_charged)
      : bytes_(std::move(bytes)), tree_(std::move(tree)), bytes_charged_(bytes_charged) {}
  const pickle::PickleValue& root() const { return tree_->root(); }
  // What reading it cost besides the file's bytes (as charged to its ReadBudget).
  std::uint64_t bytes_charged() const { return bytes_charged_; }

 private:
  std::shared_ptr<const std::string> bytes_;
  std::unique_ptr<pickle::Unpickled> tree_;
  std::uint64_t bytes_charged_;
};

// Reads an archive held in memory (the entry point of fuzz targets: no file system). Throws a
// std::runtime_error subclass for anything malformed (zip, pickle), refused (a global outside the
// allow-list, TorchScriptArchiveError) or over `limits` (LimitError).
TorchArchive read_torch_archive(std::shared_ptr<const std::string> bytes, const ReadLimits& limits);
TorchArchive read_torch_archive(std::string_view bytes, const ReadLimits& limits);  // copies

// Reads the archive at `path` with default_read_limits(its size). Throws CheckpointError naming
// `what` and `path` for a missing or non-regular file, the legacy (pre-1.6) torch.save format and
// everything read_torch_archive throws; a TorchScript archive's message ends in
// `torchscript_hint`.
TorchArchive load_torch_archive(const std::string& path, const std::string& what,
                                const std::string& torchscript_hint);
// The same on bytes in memory, `name` standing for the file in messages (fuzz targets, tests).
TorchArchive load_torch_archive(std::shared_ptr<const std::string> bytes, const std::string& what,
                                const std::string& name, const std::string& torchscript_hint,
                                const ReadLimits& limits);

// Writes an archive: compose the pickle with pickle(), emit each tensor with tensor() (a
// `_rebuild_tensor_v2` call on a new storage record holding a contiguous CPU copy), then write.
// The records, their names (`archive/...`), contents and order are torch.save's, every record's
// data starts on a 64-byte boundary (torch.load(mmap=True) maps them).
class TorchArchiveWriter {
 public:
  pickle::PickleWriter& pickle() { return pickle_; }
  void tensor(const torch::Tensor& tensor);
  // The archive's bytes. `force_zip64` writes zip64 fields even where sizes do not need them.
  std::string to_bytes(bool force_zip64 = false);
  // Writes `path` atomically (`<path>.tmp`, fsync, rename). Any write failure throws
  // RuntimeError (exit 5) naming the file and, for a full disk (ENOSPC, EDQUOT, EFBIG), the free
  // space left; the temporary file is removed and a previous `path` stays as it was.
  void write_file(const std::string& path);

 private:
  void write_records(zip::ByteSink& sink, bool force_zip64);
  pickle::PickleWriter pickle_;
  std::vector<torch::Tensor> storages_;  // contiguous CPU tensors, record data/<index>
  bool finished_ = false;
};

}  // namespace ltfit
