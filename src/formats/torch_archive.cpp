// Reading torch.save archives (torch_archive.h): the file, the zip container (zip_archive.h),
// refusing TorchScript and legacy files, then data.pkl through torch's allow-listed globals
// (torch_archive_unpickler.h); errors become CheckpointErrors naming the file. Writing is in
// torch_archive_writer.cpp.
#include "ltfit/formats/torch_archive.h"

#include <algorithm>
#include <cstring>

#include <torch/torch.h>

#include "formats/torch_archive_unpickler.h"
#include "formats/zip_archive.h"
#include "ltfit/formats/file_bytes.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

using pickle::PickleError;

// The folder all records live in ("archive/", or the file's stem for torch.save to a path).
std::string archive_prefix(const zip::ZipReader& zip) {
  if (zip.entries().empty()) throw PickleError("not a torch.save archive (an empty zip)");
  const std::string& first = zip.entries().front().name;
  const std::size_t slash = first.find('/');
  if (slash == std::string::npos) {
    throw PickleError("not a torch.save archive (its records are not in a folder)");
  }
  return first.substr(0, slash + 1);
}

// TorchScript archives (torch.jit.save, LibTorch's serialize::OutputArchive) hold code.
void refuse_torchscript(const zip::ZipReader& zip) {
  for (const zip::ZipEntry& e : zip.entries()) {
    const std::size_t slash = e.name.find('/');
    const std::string_view rest = slash == std::string::npos
                                      ? std::string_view(e.name)
                                      : std::string_view(e.name).substr(slash + 1);
    if (rest == "constants.pkl" || rest.rfind("code/", 0) == 0) {
      throw TorchScriptArchiveError("it is a TorchScript archive (it holds '" + e.name +
                                    "'): loading one runs code stored in the file");
    }
  }
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

TorchArchive read_torch_archive(std::shared_ptr<const std::string> bytes,
                                const ReadLimits& limits) {
  ReadBudget budget(limits.max_bytes);
  const zip::ZipReader zip(*bytes, budget);
  refuse_torchscript(zip);
  const std::string prefix = archive_prefix(zip);
  if (const zip::ZipEntry* order = zip.find(prefix + "byteorder")) {
    const zip::ZipRecord record = zip.read(*order);
    if (record.bytes != "little") {
      throw PickleError("the archive's byte order is '" + std::string(record.bytes.substr(0, 16)) +
                        "'; only little-endian archives are read");
    }
  }
  const zip::ZipEntry* pkl = zip.find(prefix + "data.pkl");
  if (pkl == nullptr) throw PickleError("not a torch.save archive (no data.pkl record)");
  const zip::ZipRecord pickle_record = zip.read(*pkl);  // checks compressed_size's bounds
  const std::uint64_t factor = limits.pickle_factor;
  budget.allow_more(pkl->compressed_size > UINT64_MAX / std::max<std::uint64_t>(factor, 1)
                        ? UINT64_MAX
                        : pkl->compressed_size * factor);
  std::unique_ptr<pickle::Unpickled> tree =
      unpickle_torch_data(pickle_record.bytes, zip, prefix, bytes, budget, limits.max_depth);
  return TorchArchive(std::move(bytes), std::move(tree), budget.used());
}

TorchArchive read_torch_archive(std::string_view bytes, const ReadLimits& limits) {
  return read_torch_archive(std::make_shared<const std::string>(bytes), limits);
}

namespace {

// The legacy (pre-1.6) format is a bare pickle that begins with LONG1 of torch's magic number.
bool is_legacy_format(std::string_view bytes) {
  static constexpr unsigned char kLegacyHead[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c,
                                                  0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
  return bytes.size() >= sizeof kLegacyHead &&
         std::memcmp(bytes.data(), kLegacyHead, sizeof kLegacyHead) == 0;
}

}  // namespace

TorchArchive load_torch_archive(const std::string& path, const std::string& what,
                                const std::string& torchscript_hint) {
  std::shared_ptr<const std::string> bytes;
  try {
    bytes = read_regular_file(path);
  } catch (const std::exception& e) {
    throw CheckpointError(what + " '" + path + "' " + e.what());
  }
  const ReadLimits limits = default_read_limits(bytes->size());
  return load_torch_archive(std::move(bytes), what, path, torchscript_hint, limits);
}

TorchArchive load_torch_archive(std::shared_ptr<const std::string> bytes, const std::string& what,
                                const std::string& name, const std::string& torchscript_hint,
                                const ReadLimits& limits) {
  const std::string named = what + " '" + name + "'";
  if (is_legacy_format(*bytes)) {
    throw CheckpointError(named +
                          " is in the legacy (pre-1.6) torch.save format: re-save it with "
                          "torch.save(..., _use_new_zipfile_serialization=True)");
  }
  try {
    return read_torch_archive(std::move(bytes), limits);
  } catch (const TorchScriptArchiveError& e) {
    throw CheckpointError(named + ": " + e.what() + ", so ltfit does not load it",
                          torchscript_hint);
  } catch (const c10::Error& e) {
    throw CheckpointError(named + ": " + first_line(e.what_without_backtrace()));
  } catch (const std::exception& e) {  // ZipError, PickleError, LimitError, std::bad_alloc
    throw CheckpointError(named + ": " + first_line(e.what()));
  }
}

}  // namespace ltfit
