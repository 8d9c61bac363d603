// torch's globals given meaning for our pickle machine (torch_archive_unpickler.h): the
// allow-list, OrderedDict, the tensor and parameter rebuilds, and storages read from the archive's
// records as views of its bytes, each view checked to lie inside its storage.
#include "formats/torch_archive_unpickler.h"

#include <bit>
#include <cstring>
#include <map>
#include <optional>
#include <unordered_set>

#include <torch/torch.h>

#include "formats/zip_archive.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

using Kind = pickle::PickleValue::Kind;
using pickle::PickleError;
using pickle::PickleValue;
using pickle::ValuePtr;

static_assert(std::endian::native == std::endian::little,
              "torch.save records are little-endian; a big-endian host needs byte swapping");

// What a tensor view or storage costs besides its data (TensorImpl, StorageImpl, sizes).
constexpr std::uint64_t kTensorBytes = 1024;
constexpr std::size_t kMaxDims = 64;

// ---- dtypes ----------------------------------------------------------------------------------

struct DtypeName {
  const char* storage;  // torch.<X>Storage (what torch.save writes)
  torch::Dtype value;
};

constexpr DtypeName kDtypes[] = {
    {"FloatStorage", torch::kFloat32},
    {"DoubleStorage", torch::kFloat64},
    {"HalfStorage", torch::kFloat16},
    {"BFloat16Storage", torch::kBFloat16},
    {"LongStorage", torch::kInt64},
    {"IntStorage", torch::kInt32},
    {"ShortStorage", torch::kInt16},
    {"CharStorage", torch::kInt8},
    {"ByteStorage", torch::kUInt8},
    {"BoolStorage", torch::kBool},
    {"ComplexFloatStorage", torch::kComplexFloat},
    {"ComplexDoubleStorage", torch::kComplexDouble},
};

std::optional<torch::Dtype> dtype_of_storage(const std::string& global) {
  if (global == "torch.UntypedStorage") return torch::kUInt8;
  for (const auto& d : kDtypes) {
    if (global == std::string("torch.") + d.storage) return d.value;
  }
  return std::nullopt;
}

// ---- the allow-list --------------------------------------------------------------------------

const char* const kOrderedDict = "collections.OrderedDict";
const char* const kRebuildTensor = "torch._utils._rebuild_tensor";
const char* const kRebuildTensorV2 = "torch._utils._rebuild_tensor_v2";
const char* const kRebuildParameter = "torch._utils._rebuild_parameter";
const char* const kRebuildParameterWithState = "torch._utils._rebuild_parameter_with_state";
const char* const kRebuildFromType = "torch._tensor._rebuild_from_type_v2";
const char* const kParameterType = "torch.nn.parameter.Parameter";
const char* const kTensorType = "torch.Tensor";

bool global_allowed(const std::string& global) {
  static const std::unordered_set<std::string> allowed = {kOrderedDict,
                                                          kRebuildTensor,
                                                          kRebuildTensorV2,
                                                          kRebuildParameter,
                                                          kRebuildParameterWithState,
                                                          kRebuildFromType,
                                                          kParameterType,
                                                          kTensorType};
  return allowed.count(global) > 0 || dtype_of_storage(global).has_value();
}

// ---- reading ---------------------------------------------------------------------------------

std::int64_t int_at(const ValuePtr& tuple, std::size_t i, const char* what) {
  if (i >= tuple->items.size()) throw PickleError(std::string(what) + ": missing");
  const ValuePtr& v = tuple->items[i];
  if (v->kind != Kind::kInt && v->kind != Kind::kBool) {
    throw PickleError(std::string(what) + ": expected an int, got a " + pickle::kind_name(v->kind));
  }
  return v->integer;
}

std::vector<std::int64_t> ints_of(const ValuePtr& v, const char* what) {
  if (v->kind != Kind::kTuple) {
    throw PickleError(std::string(what) + ": expected a tuple, got a " +
                      pickle::kind_name(v->kind));
  }
  if (v->items.size() > kMaxDims) {
    throw PickleError(std::string(what) + ": " + std::to_string(v->items.size()) +
                      " dimensions (at most " + std::to_string(kMaxDims) + ")");
  }
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < v->items.size(); ++i) out.push_back(int_at(v, i, what));
  return out;
}

// Overflow-safe: the view's element count must fit in int64 and the last element it touches
// must lie inside the storage.
void check_view_fits(const std::vector<std::int64_t>& size, const std::vector<std::int64_t>& stride,
                     std::int64_t offset, std::int64_t storage_numel) {
  if (size.size() != stride.size()) throw PickleError("tensor size and stride ranks differ");
  if (offset < 0) throw PickleError("negative tensor storage offset");
  std::int64_t last = offset, numel = 1;
  bool empty = false;
  for (std::size_t i = 0; i < size.size(); ++i) {
    if (size[i] < 0 || stride[i] < 0) throw PickleError("negative tensor size or stride");
    if (size[i] == 0) empty = true;
    std::int64_t span = 0;
    if (__builtin_mul_overflow(numel, size[i], &numel) ||
        (size[i] > 0 && (__builtin_mul_overflow(size[i] - 1, stride[i], &span) ||
                         __builtin_add_overflow(last, span, &last)))) {
      throw PickleError("tensor size/stride overflow");
    }
  }
  if (!empty && last >= storage_numel) {
    throw PickleError("tensor view (offset " + std::to_string(offset) + ") reaches element " +
                      std::to_string(last) + " of a storage of " + std::to_string(storage_numel));
  }
}

// Runs data.pkl against the archive's storage records.
class TorchUnpickler {
 public:
  TorchUnpickler(const zip::ZipReader& zip, std::string prefix,
                 std::shared_ptr<const std::string> bytes, ReadBudget& budget, int max_depth)
      : zip_(zip),
        prefix_(std::move(prefix)),
        bytes_(std::move(bytes)),
        budget_(budget),
        max_depth_(max_depth) {}

  std::unique_ptr<pickle::Unpickled> run(std::string_view pickle_bytes) {
    pickle::PickleHooks hooks;
    hooks.global_allowed = global_allowed;
    hooks.reduce = [this](const std::string& g, const ValuePtr& args) {
      return reduce(g, args, 0);
    };
    hooks.persistent_load = [this](const ValuePtr& pid) { return load_storage(pid); };
    return pickle::unpickle(pickle_bytes, hooks, budget_);
  }

 private:
  ValuePtr new_value(Kind kind) {
    budget_.charge(pickle::kValueBytes, "unpickled objects");
    return pickle::make_value(kind);
  }

  ValuePtr reduce(const std::string& global, const ValuePtr& args, int depth) {
    if (args->kind != Kind::kTuple) {
      throw PickleError(global + ": arguments are a " + pickle::kind_name(args->kind) +
                        ", not a tuple");
    }
    if (global == kOrderedDict) {
      if (!args->items.empty()) throw PickleError(global + " with arguments is not supported");
      return new_value(Kind::kDict);  // torch passes no items; SETITEMS fills it
    }
    if (global == kRebuildTensorV2 || global == kRebuildTensor) return rebuild_tensor(args);
    if (global == kRebuildParameter || global == kRebuildParameterWithState) {
      if (args->items.empty() || args->items[0]->kind != Kind::kTensor) {
        throw PickleError(global + ": expected a tensor as first argument");
      }
      return args->items[0];
    }
    if (global == kRebuildFromType) return rebuild_from_type(args, depth);
    throw PickleError("global '" + global + "' cannot be called here");
  }

  // (func, type, args, state): a plain Tensor or Parameter made by `func(*args)`.
  ValuePtr rebuild_from_type(const ValuePtr& args, int depth) {
    if (depth >= max_depth_) {
      throw PickleError(std::string(kRebuildFromType) + " nested more than " +
                        std::to_string(max_depth_) + " deep");
    }
    const auto& a = args->items;
    if (a.size() < 3 || a[0]->kind != Kind::kGlobal || a[1]->kind != Kind::kGlobal ||
        (a[1]->text != kParameterType && a[1]->text != kTensorType)) {
      throw PickleError(std::string(kRebuildFromType) +
                        ": expected (function, torch.Tensor or Parameter, arguments, state)");
    }
    ValuePtr out = reduce(a[0]->text, a[2], depth + 1);
    if (out->kind != Kind::kTensor) {
      throw PickleError(std::string(kRebuildFromType) + " did not make a tensor");
    }
    return out;
  }

  // ('storage', <storage type global>, key, location, numel)
  ValuePtr load_storage(const ValuePtr& pid) {
    if (pid->kind != Kind::kTuple || pid->items.size() < 5 ||
        pid->items[0]->kind != Kind::kString || pid->items[0]->text != "storage") {
      throw PickleError("unsupported persistent id (expected a ('storage', ...) tuple)");
    }
    const ValuePtr& type = pid->items[1];
    const ValuePtr& key = pid->items[2];
    if (type->kind != Kind::kGlobal || key->kind != Kind::kString) {
      throw PickleError("malformed storage persistent id");
    }
    const std::optional<torch::Dtype> dtype = dtype_of_storage(type->text);
    if (!dtype) throw PickleError("unsupported storage type " + type->text);
    const std::int64_t numel = int_at(pid, 4, "storage size");
    auto it = storages_.find(key->text);
    if (it == storages_.end()) {
      it = storages_.emplace(key->text, read_storage(key->text, *dtype, numel)).first;
    }
    if (it->second.scalar_type() != *dtype || it->second.numel() < numel) {
      throw PickleError("storage " + key->text + " is used with two different dtypes or sizes");
    }
    ValuePtr v = new_value(Kind::kStorage);
    v->tensor = it->second;
    return v;
  }

  // The record's bytes as a 1-D tensor: a view of the file (or of the inflated record), copied
  // only when not aligned for its dtype.
  torch::Tensor read_storage(const std::string& key, torch::Dtype dtype, std::int64_t numel) {
    const std::string name = "data/" + key;
    const zip::ZipEntry* entry = zip_.find(prefix_ + name);
    if (entry == nullptr) throw PickleError("the archive has no storage record " + name);
    const auto item = std::size_t(c10::elementSize(dtype));
    if (numel < 0 || std::uint64_t(numel) > entry->uncompressed_size / item) {
      throw PickleError("storage record " + name + " holds " +
                        std::to_string(entry->uncompressed_size) + " bytes, fewer than its " +
                        std::to_string(numel) + " elements need");
    }
    zip::ZipRecord record = zip_.read(*entry);
    budget_.charge(kTensorBytes, "tensor storages");
    const auto options = torch::TensorOptions().dtype(dtype);
    char* data = const_cast<char*>(record.bytes.data());
    if (numel == 0) return torch::empty({0}, options);
    if (reinterpret_cast<std::uintptr_t>(data) % item != 0) {
      budget_.charge(std::uint64_t(numel) * item, "copies of unaligned storages");
      torch::Tensor copy = torch::empty({numel}, options);
      std::memcpy(copy.data_ptr(), data, std::size_t(numel) * item);
      return copy;
    }
    std::shared_ptr<const void> keep_alive =
        record.inflated ? std::shared_ptr<const void>(record.inflated) : bytes_;
    return torch::from_blob(
        data, {numel}, [keep_alive](void*) mutable { keep_alive.reset(); }, options);
  }

  // (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata]): a view
  // of the storage, never a copy.
  ValuePtr rebuild_tensor(const ValuePtr& args) {
    if (args->items.size() < 4 || args->items[0]->kind != Kind::kStorage) {
      throw PickleError("_rebuild_tensor_v2: expected (storage, offset, size, stride, ...)");
    }
    const torch::Tensor& storage = args->items[0]->tensor;
    const std::int64_t offset = int_at(args, 1, "tensor storage offset");
    const std::vector<std::int64_t> size = ints_of(args->items[2], "tensor size");
    const std::vector<std::int64_t> stride = ints_of(args->items[3], "tensor stride");
    check_view_fits(size, stride, offset, storage.numel());
    ValuePtr v = new_value(Kind::kTensor);
    budget_.charge(kTensorBytes, "tensor views");
    v->tensor = storage.as_strided(size, stride, offset);
    return v;
  }

  const zip::ZipReader& zip_;
  const std::string prefix_;
  std::shared_ptr<const std::string> bytes_;
  ReadBudget& budget_;
  const int max_depth_;
  std::map<std::string, torch::Tensor> storages_;  // key -> 1-D storage, loaded once
};

}  // namespace

const char* storage_name_of(torch::Dtype dtype) {
  for (const auto& d : kDtypes) {
    if (d.value == dtype) return d.storage;
  }
  throw CheckpointError(std::string("cannot save tensors of dtype ") + c10::toString(dtype));
}

std::unique_ptr<pickle::Unpickled> unpickle_torch_data(
    std::string_view pickle_bytes, const zip::ZipReader& zip, const std::string& prefix,
    std::shared_ptr<const std::string> archive_bytes, ReadBudget& budget, int max_depth) {
  TorchUnpickler unpickler(zip, prefix, std::move(archive_bytes), budget, max_depth);
  return unpickler.run(pickle_bytes);
}

}  // namespace ltfit
