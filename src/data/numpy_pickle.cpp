// read_numpy_pickle (numpy_pickle.h): the hooks that rebuild NumPy arrays, dtypes and Python 3's
// bytes from the few globals numpy_pickle.h admits, and nothing else.
//
// What NumPy writes (numpy/_core/numeric.py, ndarray.__reduce_ex__): up to protocol 4,
// `_reconstruct(ndarray, (0,), b'b')` then BUILD with the state
// `(1, shape, dtype, is_fortran, raw_bytes)`; a dtype is `dtype('u1', False, True)` then BUILD
// with `(3, byte_order, ...)`; protocol 5 writes `_frombuffer(buffer, dtype, shape, order)`.
#include "data/numpy_pickle.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace ltfit {

namespace {

using pickle::PickleError;
using pickle::PickleValue;
using pickle::ValuePtr;
using Kind = PickleValue::Kind;

constexpr const char* kArray = "numpy.ndarray";
constexpr const char* kDtype = "numpy.dtype";

bool is_reconstruct(const std::string& name) {
  return name == "numpy.core.multiarray._reconstruct" ||
         name == "numpy._core.multiarray._reconstruct";
}

bool is_frombuffer(const std::string& name) {
  return name == "numpy.core.numeric._frombuffer" || name == "numpy._core.numeric._frombuffer";
}

bool is_bytes(const std::string& name) {
  return name == "__builtin__.bytes" || name == "builtins.bytes";
}

bool allowed(const std::string& name) {
  return is_reconstruct(name) || is_frombuffer(name) || is_bytes(name) || name == kArray ||
         name == kDtype || name == "_codecs.encode";
}

const PickleValue& item(const ValuePtr& tuple, std::size_t i, Kind kind, const char* what) {
  if (tuple->kind != Kind::kTuple || tuple->items.size() <= i || tuple->items[i]->kind != kind) {
    throw PickleError(std::string("NumPy pickle: ") + what + " is not a " +
                      pickle::kind_name(kind));
  }
  return *tuple->items[i];
}

// Python 3's bytes under protocol 2: _codecs.encode(text, 'latin1') with `text` each byte as a
// code point (here UTF-8); the bytes are the code points, all below 256.
std::string latin1_bytes(const std::string& utf8) {
  std::string out;
  out.reserve(utf8.size());
  for (std::size_t i = 0; i < utf8.size(); ++i) {
    const auto c = std::uint8_t(utf8[i]);
    if (c < 0x80) {
      out.push_back(char(c));
    } else if ((c & 0xE0) == 0xC0 && c <= 0xC3 && i + 1 < utf8.size() &&
               (std::uint8_t(utf8[i + 1]) & 0xC0) == 0x80) {
      out.push_back(char(((c & 0x03) << 6) | (std::uint8_t(utf8[++i]) & 0x3F)));
    } else {
      throw PickleError("NumPy pickle: _codecs.encode of text that is not Latin-1");
    }
  }
  return out;
}

// A dtype's tensor type and item size from its type string ('u1', '<i8', 'f4', ...).
torch::ScalarType scalar_type(const std::string& code, std::size_t* item_bytes) {
  struct Entry {
    const char* code;
    torch::ScalarType type;
    std::size_t bytes;
  };
  static constexpr Entry kTypes[] = {
      {"u1", torch::kUInt8, 1}, {"i1", torch::kInt8, 1},    {"b1", torch::kBool, 1},
      {"i2", torch::kInt16, 2}, {"i4", torch::kInt32, 4},   {"i8", torch::kInt64, 8},
      {"f2", torch::kHalf, 2},  {"f4", torch::kFloat32, 4}, {"f8", torch::kFloat64, 8}};
  std::string bare = code;
  if (!bare.empty() && (bare[0] == '<' || bare[0] == '|' || bare[0] == '=')) bare.erase(0, 1);
  for (const Entry& e : kTypes) {
    if (bare == e.code) {
      *item_bytes = e.bytes;
      return e.type;
    }
  }
  throw PickleError("NumPy pickle: dtype '" + code +
                    "' is not read (bool, int8 to int64, uint8 and float16 to float64 are)");
}

class NumpyHooks {
 public:
  explicit NumpyHooks(ReadBudget& budget) : budget_(budget) {}

  pickle::PickleHooks hooks() {
    pickle::PickleHooks h;
    h.global_allowed = allowed;
    h.reduce = [this](const std::string& name, const ValuePtr& args) { return reduce(name, args); };
    h.build = [this](const ValuePtr& object, const ValuePtr& state) {
      return build(object, state);
    };
    return h;
  }

 private:
  ValuePtr object(const char* type, std::vector<ValuePtr> items) {
    budget_.charge(pickle::kValueBytes + 16 * items.size(), "NumPy objects");
    ValuePtr v = pickle::make_value(Kind::kObject);
    v->text = type;
    v->items = std::move(items);
    return v;
  }

  ValuePtr reduce(const std::string& name, const ValuePtr& args) {
    if (name == "_codecs.encode") {
      const std::string& text = item(args, 0, Kind::kString, "_codecs.encode's text").text;
      const std::string& codec = item(args, 1, Kind::kString, "_codecs.encode's codec").text;
      if (codec != "latin1" && codec != "latin-1") {
        throw PickleError("NumPy pickle: _codecs.encode with codec '" + codec + "', not latin1");
      }
      return string(latin1_bytes(text));
    }
    if (is_bytes(name)) {
      if (!args->items.empty()) throw PickleError("NumPy pickle: bytes() with arguments");
      return string("");
    }
    if (name == kDtype) {
      item(args, 0, Kind::kString, "a dtype's type");
      return object(kDtype, {args->items[0]});
    }
    if (is_reconstruct(name)) {
      const PickleValue& type = item(args, 0, Kind::kGlobal, "_reconstruct's type");
      if (type.text != kArray) throw PickleError("NumPy pickle: _reconstruct of " + type.text);
      return object(kArray, {});
    }
    if (is_frombuffer(name)) {
      const PickleValue& buffer = item(args, 0, Kind::kString, "_frombuffer's buffer");
      const PickleValue& order = item(args, 3, Kind::kString, "_frombuffer's order");
      return array(buffer.text, *args->items[1], *args->items[2], order.text == "F");
    }
    throw PickleError("NumPy pickle: '" + name + "' cannot be applied");
  }

  ValuePtr build(const ValuePtr& target, const ValuePtr& state) {
    if (target->kind == Kind::kObject && target->text == kDtype) {
      // (version, byte order, ...): only little-endian or byte-sized data is read.
      const std::string& order = item(state, 1, Kind::kString, "a dtype's byte order").text;
      if (order == ">") throw PickleError("NumPy pickle: big-endian arrays are not read");
      return target;
    }
    if (target->kind == Kind::kObject && target->text == kArray && target->items.empty()) {
      const PickleValue& raw = item(state, 4, Kind::kString, "an array's data");
      const PickleValue& fortran = *state->items[3];
      return array(raw.text, *state->items[2], *state->items[1],
                   fortran.kind == Kind::kBool && fortran.integer != 0);
    }
    throw PickleError(std::string("NumPy pickle: BUILD on a ") + pickle::kind_name(target->kind) +
                      " (" + target->text + ")");
  }

  ValuePtr string(std::string bytes) {
    budget_.charge(pickle::kValueBytes + bytes.size(), "NumPy bytes");
    ValuePtr v = pickle::make_value(Kind::kString);
    v->text = std::move(bytes);
    return v;
  }

  // An array of `shape` (a tuple of ints) and `dtype` from its bytes in C or Fortran order.
  ValuePtr array(const std::string& raw, const PickleValue& dtype, const PickleValue& shape,
                 bool fortran) {
    if (dtype.kind != Kind::kObject || dtype.text != kDtype || dtype.items.empty() ||
        dtype.items[0]->kind != Kind::kString) {
      throw PickleError("NumPy pickle: an array without a dtype");
    }
    std::size_t item_bytes = 0;
    const torch::ScalarType type = scalar_type(dtype.items[0]->text, &item_bytes);
    if (shape.kind != Kind::kTuple || shape.items.size() > 8) {
      throw PickleError("NumPy pickle: an array's shape is not a tuple of at most 8 sizes");
    }
    std::vector<std::int64_t> sizes;
    std::uint64_t count = 1;
    for (const ValuePtr& s : shape.items) {
      if (s->kind != Kind::kInt || s->integer < 0 ||
          (s->integer > 0 && count > (UINT64_MAX / item_bytes) / std::uint64_t(s->integer))) {
        throw PickleError("NumPy pickle: an array's shape is not a tuple of sizes");
      }
      count *= std::uint64_t(s->integer);
      sizes.push_back(s->integer);
    }
    if (count * item_bytes != raw.size()) {
      throw PickleError("NumPy pickle: an array of " + std::to_string(count) + " items of " +
                        std::to_string(item_bytes) + " bytes holds " + std::to_string(raw.size()) +
                        " bytes");
    }
    budget_.charge(pickle::kValueBytes + raw.size() * (fortran ? 2 : 1), "NumPy arrays");
    std::vector<std::int64_t> stored(sizes);
    if (fortran) std::reverse(stored.begin(), stored.end());
    torch::Tensor t = torch::empty(stored, torch::TensorOptions().dtype(type));
    if (!raw.empty()) std::memcpy(t.data_ptr(), raw.data(), raw.size());
    if (fortran) {
      std::vector<std::int64_t> dims(sizes.size());
      for (std::size_t d = 0; d < dims.size(); ++d) dims[d] = std::int64_t(dims.size() - 1 - d);
      t = t.permute(dims).contiguous();
    }
    ValuePtr v = pickle::make_value(Kind::kTensor);
    v->tensor = std::move(t);
    return v;
  }

  ReadBudget& budget_;
};

}  // namespace

std::unique_ptr<pickle::Unpickled> read_numpy_pickle(std::string_view bytes, ReadBudget& budget) {
  NumpyHooks numpy(budget);
  return pickle::unpickle(bytes, numpy.hooks(), budget);
}

}  // namespace ltfit
