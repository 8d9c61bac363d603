// torch's side of reading data.pkl (private to src/model): the allow-list of globals a torch.save
// pickle may name, what each admitted global means (OrderedDict, the tensor and parameter
// rebuilds), storage records as tensors viewing the archive's bytes, and the storage-type names
// of dtypes that the writer uses too. torch_archive.cpp reads archives with it. Thread-safe (no
// shared state).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <torch/types.h>

#include "ltfit/formats/pickle.h"
#include "ltfit/util/read_limits.h"

namespace ltfit {

namespace zip {
class ZipReader;
}  // namespace zip

// Runs `pickle_bytes` (the archive's data.pkl) with torch's allow-listed globals, loading storages
// from the records `<prefix>data/<key>` of `zip`, whose bytes `archive_bytes` holds (tensors keep
// it alive). Throws PickleError, ZipError or LimitError (`budget`); `max_depth` bounds nested
// _rebuild_from_type_v2 calls.
std::unique_ptr<pickle::Unpickled> unpickle_torch_data(
    std::string_view pickle_bytes, const zip::ZipReader& zip, const std::string& prefix,
    std::shared_ptr<const std::string> archive_bytes, ReadBudget& budget, int max_depth);

// "FloatStorage" for kFloat32 and so on (what torch.save names as torch.<X>Storage); throws
// CheckpointError for a dtype torch.save files cannot hold.
const char* storage_name_of(torch::Dtype dtype);

}  // namespace ltfit
