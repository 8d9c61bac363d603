// A small Python pickle machine (read) and emitter (write): enough for `torch.save` files and for
// data pickles such as CIFAR's Python batches.
//
// The reader runs the opcodes of protocols 0 to 5 that plain data uses (no INST/OBJ, no
// out-of-band buffers) into a tree of `PickleValue`s. It runs no code: a global is only a name,
// admitted or refused by the caller (`PickleHooks::global_allowed`), and what applying one means
// (OrderedDict, _rebuild_tensor_v2, ...) and what a persistent id loads are decided by the caller's
// hooks, so this file knows nothing about torch. Every read is bounds-checked and everything the
// machine allocates (objects, strings, container slots, memo entries) is charged to a ReadBudget,
// so a flood of cheap opcodes ends in a LimitError, not in gigabytes. Dicts keep a hash index of
// their string and int keys: building one is linear in its size. Malformed input throws
// PickleError, never reads out of range. Not thread-safe per instance; no globals.
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

#include "ltfit/util/read_limits.h"

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
    kStorage,  // a storage from a persistent id (`tensor` is its 1-D contents)
    kTensor,
    kObject  // an instance a caller's hook made: `text` its class, `items` its arguments/state
  };
  Kind kind = Kind::kNone;
  std::int64_t integer = 0;                            // kBool, kInt
  double real = 0.0;                                   // kFloat
  std::string text;                                    // kString; kGlobal: "module.name"
  std::vector<ValuePtr> items;                         // kTuple, kList
  std::vector<std::pair<ValuePtr, ValuePtr>> entries;  // kDict, in insertion order
  torch::Tensor tensor;                                // kStorage, kTensor
};

// What the machine charges its budget for one object (the value and its shared_ptr block).
inline constexpr std::uint64_t kValueBytes = sizeof(PickleValue) + 64;

ValuePtr make_value(PickleValue::Kind kind);
const char* kind_name(PickleValue::Kind kind);

// What the caller decides. `global_allowed` admits a global ("module.name") when GLOBAL or
// STACK_GLOBAL names it; a refused one stops the load. `reduce` applies an admitted global to an
// argument tuple (REDUCE, NEWOBJ); `build` gives an object its state (BUILD; without it the
// state is dropped); `persistent_load` resolves a BINPERSID id. All may throw.
struct PickleHooks {
  std::function<bool(const std::string& global)> global_allowed;
  std::function<ValuePtr(const std::string& global, const ValuePtr& args)> reduce;
  std::function<ValuePtr(const ValuePtr& object, const ValuePtr& state)> build;
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

// Runs the pickle in `data` to its STOP, charging `budget`.
std::unique_ptr<Unpickled> unpickle(std::string_view data, const PickleHooks& hooks,
                                    ReadBudget& budget);

// The entry of a dict whose key is the string `key`, or null (linear: for small dicts).
const PickleValue* find_entry(const PickleValue& dict, std::string_view key);

// Emits protocol-2 opcodes into a byte string. Callers compose them like Python's pickler would:
// e.g. a dict is empty_dict(), mark(), key, value, ..., set_items().
class PickleWriter {
 public:
  PickleWriter();  // writes PROTO 2
  void mark();
  void global(std::string_view module, std::string_view name);
  void string(std::string_view text);        // BINUNICODE (Python 3's str)
  void byte_string(std::string_view bytes);  // SHORT_BINSTRING/BINSTRING (Python 2's str)
  void integer(std::int64_t value);
  void real(double value);  // BINFLOAT, exact
  void boolean(bool value);
  void none();
  void empty_tuple();
  void tuple();  // from the last mark
  void empty_list();
  void appends();  // APPENDS from the last mark onto the list below it
  void empty_dict();
  void set_items();  // SETITEMS from the last mark onto the dict below it
  void reduce();
  void build();          // BUILD: the state on top, the object below it
  void persistent_id();  // BINPERSID: pops the id
  std::string finish();  // writes STOP, returns the bytes

 private:
  std::string out_;
};

}  // namespace ltfit::pickle
