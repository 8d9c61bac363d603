// Writing torch.save archives (torch_archive.h): the pickle composed by the caller, each tensor a
// _rebuild_tensor_v2 call on its own storage record, the records torch.save writes, in its order,
// 64-byte aligned (zip_archive.h), and an atomic file write that names a full disk.
#include "ltfit/formats/torch_archive.h"

#include <bit>
#include <cstdio>

#include <torch/torch.h>

#include "formats/atomic_zip.h"
#include "formats/torch_archive_unpickler.h"
#include "formats/zip_archive.h"
#include "ltfit/util/error.h"

namespace ltfit {

static_assert(std::endian::native == std::endian::little,
              "torch.save records are little-endian; a big-endian host needs byte swapping");

// torch._utils._rebuild_tensor_v2(persid(('storage', torch.XStorage, key, 'cpu', numel)),
//                                 0, size, stride, False, collections.OrderedDict())
void TorchArchiveWriter::tensor(const torch::Tensor& tensor) {
  storages_.push_back(tensor.detach().to(torch::kCPU).contiguous());
  const torch::Tensor& t = storages_.back();
  pickle::PickleWriter& w = pickle_;
  w.global("torch._utils", "_rebuild_tensor_v2");
  w.mark();
  w.mark();
  w.string("storage");
  w.global("torch", storage_name_of(t.scalar_type()));
  w.string(std::to_string(storages_.size() - 1));
  w.string("cpu");
  w.integer(t.numel());
  w.tuple();
  w.persistent_id();
  w.integer(0);
  w.mark();
  for (std::int64_t s : t.sizes()) w.integer(s);
  w.tuple();
  w.mark();
  for (std::int64_t s : c10::contiguous_strides(t.sizes())) w.integer(s);
  w.tuple();
  w.boolean(false);
  w.global("collections", "OrderedDict");
  w.empty_tuple();
  w.reduce();
  w.tuple();
  w.reduce();
}

void TorchArchiveWriter::write_records(zip::ByteSink& sink, bool force_zip64) {
  if (finished_) throw std::logic_error("TorchArchiveWriter written twice");
  finished_ = true;
  zip::ZipWriterOptions options;
  options.force_zip64 = force_zip64;
  zip::ZipWriter zip(sink, options);
  // The records, their order and contents are torch.save's (torch/serialization.py `_save`, and
  // PyTorchStreamWriter's `version` and `.data/serialization_id` at the end).
  zip.add("archive/data.pkl", pickle_.finish());
  zip.add("archive/.format_version", "1");
  zip.add("archive/.storage_alignment", "64");
  zip.add("archive/byteorder", "little");
  std::uint64_t id_hash = 1469598103934665603ull, total = 0;  // FNV-1a over record CRCs
  for (std::size_t i = 0; i < storages_.size(); ++i) {
    const std::string_view data(static_cast<const char*>(storages_[i].data_ptr()),
                                storages_[i].nbytes());
    const std::uint32_t crc = zip.add("archive/data/" + std::to_string(i), data);
    id_hash = (id_hash ^ crc) * 1099511628211ull;  // each storage's CRC-32 computed once
    total += data.size();
  }
  zip.add("archive/version", "3\n");
  char id[48];
  std::snprintf(id, sizeof id, "%020llu%020llu", static_cast<unsigned long long>(id_hash),
                static_cast<unsigned long long>(total));
  zip.add("archive/.data/serialization_id", std::string_view(id, 40));
  zip.finish();
  storages_.clear();
}

std::string TorchArchiveWriter::to_bytes(bool force_zip64) {
  zip::StringSink sink;
  write_records(sink, force_zip64);
  return std::move(sink.str());
}

void TorchArchiveWriter::write_file(const std::string& path) {
  try {
    AtomicFileSink sink(path);
    write_records(sink, /*force_zip64=*/false);
    sink.commit();
  } catch (const WriteError& e) {
    if (!e.disk_full()) {
      throw RuntimeError(e.what(), "check the permissions of " + path + "'s folder");
    }
    const std::int64_t free = free_bytes_near(path);
    const std::string space = free < 0 ? "unknown free space"
                                       : std::to_string(free / (1024 * 1024)) + " MiB (" +
                                             std::to_string(free) + " bytes) free";
    throw RuntimeError(std::string(e.what()) + "; " + space + " on the file system of '" + path +
                           "'; the partial file was removed",
                       "free disk space (or raise the file-size limit, ulimit -f) and run again");
  }
}

}  // namespace ltfit
