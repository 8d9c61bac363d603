// torch.save zip archives: PyTorchStreamReader/Writer handle the zip (and its top folder name);
// data.pkl is run by our pickle machine (model/pickle.h) with torch's globals given meaning here.
#include "ltfit/model/torch_weights.h"

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include <caffe2/serialize/inline_container.h>
#include <torch/torch.h>

#include "ltfit/util/error.h"
#include "model/pickle.h"

namespace ltfit {

namespace {

namespace fs = std::filesystem;
using Kind = pickle::PickleValue::Kind;
using pickle::PickleError;
using pickle::PickleValue;
using pickle::ValuePtr;

static_assert(std::endian::native == std::endian::little,
              "torch.save records are little-endian; a big-endian host needs byte swapping");

// ---- dtypes ----------------------------------------------------------------------------------

struct DtypeName {
  const char* storage;  // torch.<X>Storage (what torch.save writes)
  const char* dtype;    // torch.<dtype> (newer spelling)
  torch::Dtype value;
};

constexpr DtypeName kDtypes[] = {
    {"FloatStorage", "float32", torch::kFloat32},
    {"DoubleStorage", "float64", torch::kFloat64},
    {"HalfStorage", "float16", torch::kFloat16},
    {"BFloat16Storage", "bfloat16", torch::kBFloat16},
    {"LongStorage", "int64", torch::kInt64},
    {"IntStorage", "int32", torch::kInt32},
    {"ShortStorage", "int16", torch::kInt16},
    {"CharStorage", "int8", torch::kInt8},
    {"ByteStorage", "uint8", torch::kUInt8},
    {"BoolStorage", "bool", torch::kBool},
    {"ComplexFloatStorage", "complex64", torch::kComplexFloat},
    {"ComplexDoubleStorage", "complex128", torch::kComplexDouble},
};

std::optional<torch::Dtype> dtype_of_global(const std::string& global) {
  if (global == "torch.UntypedStorage") return torch::kUInt8;
  for (const auto& d : kDtypes) {
    if (global == std::string("torch.") + d.storage || global == std::string("torch.") + d.dtype) {
      return d.value;
    }
  }
  return std::nullopt;
}

const char* storage_name_of(torch::Dtype dtype) {
  for (const auto& d : kDtypes) {
    if (d.value == dtype) return d.storage;
  }
  throw CheckpointError(std::string("cannot save tensors of dtype ") + c10::toString(dtype));
}

// ---- reading ---------------------------------------------------------------------------------

std::int64_t int_at(const ValuePtr& tuple, std::size_t i, const char* what) {
  const ValuePtr& v = tuple->items.at(i);
  if (v->kind != Kind::kInt && v->kind != Kind::kBool) {
    throw PickleError(std::string(what) + ": expected an int, got a " + pickle::kind_name(v->kind));
  }
  return v->integer;
}

std::vector<std::int64_t> ints_of(const ValuePtr& v, const char* what) {
  if (v->kind != Kind::kTuple && v->kind != Kind::kList) {
    throw PickleError(std::string(what) + ": expected a tuple, got a " +
                      pickle::kind_name(v->kind));
  }
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < v->items.size(); ++i) out.push_back(int_at(v, i, what));
  return out;
}

// Runs data.pkl against the archive's storage records.
class StateDictUnpickler {
 public:
  explicit StateDictUnpickler(caffe2::serialize::PyTorchStreamReader& reader) : reader_(reader) {}

  pickle::Unpickled run(std::string_view pickle_bytes) {
    pickle::PickleHooks hooks;
    hooks.reduce = [this](const std::string& g, const ValuePtr& args) { return reduce(g, args); };
    hooks.persistent_load = [this](const ValuePtr& pid) { return load_storage(pid); };
    return pickle::unpickle(pickle_bytes, hooks);
  }

 private:
  ValuePtr reduce(const std::string& global, const ValuePtr& args) {
    if (global == "collections.OrderedDict" || global == "builtins.dict") {
      return pickle::make_value(Kind::kDict);  // torch passes no items; SETITEMS fills it
    }
    if (global == "torch._utils._rebuild_tensor_v2" || global == "torch._utils._rebuild_tensor") {
      return rebuild_tensor(args);
    }
    if (global == "torch._utils._rebuild_parameter" ||
        global == "torch._utils._rebuild_parameter_with_state") {
      if (args->items.empty() || args->items[0]->kind != Kind::kTensor) {
        throw PickleError(global + ": expected a tensor as first argument");
      }
      return args->items[0];
    }
    if (global == "torch._tensor._rebuild_from_type_v2" && args->items.size() >= 3 &&
        args->items[0]->kind == Kind::kGlobal) {  // (func, type, args, state): plain subclass
      return reduce(args->items[0]->text, args->items[2]);
    }
    // Unknown: kept as an opaque value so that unrelated entries (an optimizer's state next to
    // "model") do not fail the load; it is an error only if the state dict itself holds one.
    ValuePtr opaque = pickle::make_value(Kind::kOpaque);
    opaque->text = global;
    return opaque;
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
    const std::optional<torch::Dtype> dtype = dtype_of_global(type->text);
    if (!dtype) throw PickleError("unsupported storage type " + type->text);
    const std::int64_t numel = int_at(pid, 4, "storage size");

    auto it = storages_.find(key->text);
    if (it == storages_.end())
      it = storages_.emplace(key->text, read_record(key->text, *dtype, numel)).first;
    if (it->second.scalar_type() != *dtype || it->second.numel() < numel) {
      throw PickleError("storage " + key->text + " is used with two different dtypes or sizes");
    }
    ValuePtr v = pickle::make_value(Kind::kTensor);
    v->tensor = it->second;  // the 1-D storage; _rebuild_tensor_v2 views it
    return v;
  }

  torch::Tensor read_record(const std::string& key, torch::Dtype dtype, std::int64_t numel) {
    const std::string name = "data/" + key;
    if (!reader_.hasRecord(name)) throw PickleError("the archive has no storage record " + name);
    const std::size_t bytes = reader_.getRecordSize(name);
    const auto item = std::size_t(c10::elementSize(dtype));
    if (numel < 0 || std::uint64_t(numel) > bytes / item) {
      throw PickleError("storage record " + name + " holds " + std::to_string(bytes) +
                        " bytes, fewer than its " + std::to_string(numel) + " elements need");
    }
    torch::Tensor storage = torch::empty({numel}, torch::TensorOptions().dtype(dtype));
    if (numel > 0) {
      auto [data, size] = reader_.getRecord(name);
      std::memcpy(storage.data_ptr(), data.get(), std::size_t(numel) * item);
    }
    return storage;
  }

  // (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
  static ValuePtr rebuild_tensor(const ValuePtr& args) {
    if (args->items.size() < 4 || args->items[0]->kind != Kind::kTensor) {
      throw PickleError("_rebuild_tensor_v2: expected (storage, offset, size, stride, ...)");
    }
    const torch::Tensor& storage = args->items[0]->tensor;
    const std::int64_t offset = int_at(args, 1, "tensor storage offset");
    const std::vector<std::int64_t> size = ints_of(args->items[2], "tensor size");
    const std::vector<std::int64_t> stride = ints_of(args->items[3], "tensor stride");
    check_view_fits(size, stride, offset, storage.numel());
    ValuePtr v = pickle::make_value(Kind::kTensor);
    v->tensor = storage.as_strided(size, stride, offset).clone(torch::MemoryFormat::Contiguous);
    return v;
  }

  // Overflow-safe: the last element the view touches must lie inside the storage.
  static void check_view_fits(const std::vector<std::int64_t>& size,
                              const std::vector<std::int64_t>& stride, std::int64_t offset,
                              std::int64_t storage_numel) {
    if (size.size() != stride.size()) throw PickleError("tensor size and stride ranks differ");
    if (offset < 0) throw PickleError("negative tensor storage offset");
    std::int64_t last = offset;
    bool empty = false;
    for (std::size_t i = 0; i < size.size(); ++i) {
      if (size[i] < 0 || stride[i] < 0) throw PickleError("negative tensor size or stride");
      if (size[i] == 0) empty = true;
      std::int64_t span = 0;
      if (size[i] > 0 && (__builtin_mul_overflow(size[i] - 1, stride[i], &span) ||
                          __builtin_add_overflow(last, span, &last))) {
        throw PickleError("tensor size/stride overflow");
      }
    }
    if (!empty && last >= storage_numel) {
      throw PickleError("tensor view (offset " + std::to_string(offset) + ") reaches element " +
                        std::to_string(last) + " of a storage of " + std::to_string(storage_numel));
    }
  }

  caffe2::serialize::PyTorchStreamReader& reader_;
  std::map<std::string, torch::Tensor> storages_;  // key -> 1-D storage, loaded once
};

// The legacy (pre-1.6) format is a bare pickle that begins with LONG1 of torch's magic number.
bool is_legacy_format(const std::string& path) {
  static constexpr unsigned char kLegacyHead[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c,
                                                  0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
  char head[sizeof kLegacyHead] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(head, sizeof head);
  return in.gcount() == std::streamsize(sizeof head) &&
         std::memcmp(head, kLegacyHead, sizeof head) == 0;
}

// The mapping of names to tensors: the top-level dict, or its "state_dict" / "model" entry.
const PickleValue& find_state_mapping(const PickleValue& root) {
  if (root.kind != Kind::kDict) {
    throw PickleError(std::string("expected a dict of tensors, found a ") +
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
    if (value->kind == Kind::kOpaque) {
      const std::string name = key->kind == Kind::kString ? "'" + key->text + "'" : "an entry";
      throw PickleError(name + " holds an object of an unsupported type (global " + value->text +
                        ")");
    }
    if (key->kind != Kind::kString || value->kind != Kind::kTensor) continue;
    out.emplace_back(key->text, value->tensor);
  }
  if (out.empty() && !mapping.entries.empty()) {
    throw PickleError("expected a dict of tensors, found one without tensors");
  }
  return out;
}

std::string first_line(const char* text) {
  std::string s(text);
  const std::size_t nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

// ---- writing ---------------------------------------------------------------------------------

// torch._utils._rebuild_tensor_v2(persid(('storage', torch.XStorage, key, 'cpu', numel)),
//                                 0, size, stride, False, collections.OrderedDict())
void emit_tensor(pickle::PickleWriter& w, const torch::Tensor& t, const std::string& key) {
  w.global("torch._utils", "_rebuild_tensor_v2");
  w.mark();
  w.mark();
  w.string("storage");
  w.global("torch", storage_name_of(t.scalar_type()));
  w.string(key);
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

void write_archive(std::ofstream& file, const StateDict& state) {
  caffe2::serialize::PyTorchStreamWriter writer([&file](const void* data, std::size_t n) {
    file.write(static_cast<const char*>(data), std::streamsize(n));
    return file ? n : std::size_t(0);
  });
  std::vector<torch::Tensor> storages;
  pickle::PickleWriter w;
  w.global("collections", "OrderedDict");
  w.empty_tuple();
  w.reduce();
  w.mark();
  for (const auto& [name, tensor] : state) {
    storages.push_back(tensor.detach().to(torch::kCPU).contiguous());
    w.string(name);
    emit_tensor(w, storages.back(), std::to_string(storages.size() - 1));
  }
  w.set_items();
  const std::string pkl = w.finish();
  // The records and their order are torch.save's (torch/serialization.py, _save).
  writer.writeRecord("data.pkl", pkl.data(), pkl.size());
  writer.writeRecord(".format_version", "1", 1);
  writer.writeRecord(".storage_alignment", "64", 2);
  writer.writeRecord("byteorder", "little", 6);
  for (std::size_t i = 0; i < storages.size(); ++i) {
    writer.writeRecord("data/" + std::to_string(i), storages[i].data_ptr(), storages[i].nbytes());
  }
  writer.writeEndOfFile();
}

}  // namespace

StateDict read_torch_state_dict(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw CheckpointError(path + ": weight file does not exist (or is not a regular file)");
  }
  if (is_legacy_format(path)) {
    throw CheckpointError(path +
                          ": legacy (pre-1.6) torch.save format: re-save it with "
                          "torch.save(..., _use_new_zipfile_serialization=True)");
  }
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    if (!reader.hasRecord("data.pkl")) {
      throw PickleError("not a torch.save archive (no data.pkl record)");
    }
    auto [data, size] = reader.getRecord("data.pkl");
    const std::string_view bytes(static_cast<const char*>(data.get()), size);
    const pickle::Unpickled result = StateDictUnpickler(reader).run(bytes);
    return to_state_dict(result.root());
  } catch (const CheckpointError&) {
    throw;
  } catch (const c10::Error& e) {
    throw CheckpointError(path + ": not a readable torch.save zip archive (" +
                          first_line(e.what_without_backtrace()) + ")");
  } catch (const std::exception& e) {  // PickleError, std::out_of_range, std::bad_alloc
    throw CheckpointError(path + ": " + e.what());
  }
}

void write_torch_state_dict(const std::string& path, const StateDict& state) {
  const std::string tmp = path + ".tmp";
  try {
    {
      std::ofstream file(tmp, std::ios::binary | std::ios::trunc);
      if (!file) throw CheckpointError(path + ": cannot open " + tmp + " for writing");
      write_archive(file, state);
      file.close();
      if (!file) throw CheckpointError(path + ": writing " + tmp + " failed");
    }
    fs::rename(tmp, path);
  } catch (const std::exception& e) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    if (dynamic_cast<const CheckpointError*>(&e)) throw;
    const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
    throw CheckpointError(path + ": cannot write weights (" +
                          (c10_error ? first_line(c10_error->what_without_backtrace()) : e.what()) +
                          ")");
  }
}

}  // namespace ltfit
