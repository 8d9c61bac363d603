// A small Python pickle machine (read) and emitter (write), just enough for `torch.save` files.
//
// Private to src/model. The reader runs the protocol-2 opcodes torch.save writes (plus a few
// protocol 3/4 ones) into a tree of `PickleValue`s; what a global *means* (OrderedDict,
// _rebuild_tensor_v2, ...) and what a persistent id loads are decided by the caller through
// `PickleHooks`, so this file knows nothing about torch. Every read is bounds-checked: malformed
// input throws PickleError, never reads out of range. Not thread-safe per instance; no globals.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <torch/types.h>

namespace ltfit::pickle {

class PickleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PickleValue;
using ValuePtr = std::shared_ptr<PickleValue>;

// One unpickled object. Lists and dicts are shared (memo, BINGET) and mutable, as in Python.
struct PickleValue {
  enum class Kind {
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kTuple,
    kList,
    kDict,
    kGlobal,
    kTensor,
    kOpaque
  };
  Kind kind = Kind::kNone;
  std::int64_t integer = 0;                            // kBool, kInt
  double real = 0.0;                                   // kFloat
  std::string text;                                    // kString; kGlobal/kOpaque: "module.name"
  std::vector<ValuePtr> items;                         // kTuple, kList
  std::vector<std::pair<ValuePtr, ValuePtr>> entries;  // kDict, in insertion order
  torch::Tensor tensor;                                // kTensor
};

ValuePtr make_value(PickleValue::Kind kind);
const char* kind_name(PickleValue::Kind kind);

// What the caller decides: `reduce` applies a global ("module.name") to an argument tuple
// (REDUCE, NEWOBJ); `persistent_load` resolves a BINPERSID id. Both may throw PickleError.
struct PickleHooks {
  std::function<ValuePtr(const std::string& global, const ValuePtr& args)> reduce;
  std::function<ValuePtr(const ValuePtr& pid)> persistent_load;
};

// The result of a pickle. It owns every container the pickle made and empties them all on
// destruction: a crafted pickle can build reference cycles (a dict holding itself) or deep
// chains, which plain shared_ptr ownership would leak or free recursively.
class Unpickled {
 public:
  Unpickled(ValuePtr root, std::vector<ValuePtr> containers)
      : root_(std::move(root)), containers_(std::move(containers)) {}
  ~Unpickled();
  Unpickled(const Unpickled&) = delete;
  Unpickled& operator=(const Unpickled&) = delete;
  const PickleValue& root() const { return *root_; }

 private:
  ValuePtr root_;
  std::vector<ValuePtr> containers_;
};

// Runs the pickle in `data` to its STOP.
Unpickled unpickle(std::string_view data, const PickleHooks& hooks);

// Emits protocol-2 opcodes into a byte string. Callers compose them like Python's pickler would.
class PickleWriter {
 public:
  PickleWriter();  // writes PROTO 2
  void mark();
  void global(std::string_view module, std::string_view name);
  void string(std::string_view text);
  void integer(std::int64_t value);
  void boolean(bool value);
  void empty_tuple();
  void tuple();  // from the last mark
  void reduce();
  void persistent_id();  // BINPERSID: pops the id
  void set_items();      // SETITEMS from the last mark
  std::string finish();  // writes STOP, returns the bytes

 private:
  std::string out_;
};

}  // namespace ltfit::pickle
