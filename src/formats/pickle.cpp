// The pickle machine's run loop behind ltfit's torch.save reader (pickle.h), and the value helpers.
//
// Why ltfit reads torch.save files itself instead of calling LibTorch's `torch::pickle_load`: that
// function cannot read a state dict as `torch.save(model.state_dict(), f)` writes it. With
// LibTorch 2.15.0 (the PyPI torch 2.15 wheel), torch::pickle_load on the bytes of
// torchvision.models.resnet18().state_dict() (a collections.OrderedDict with `_metadata`) throws
// c10::Error:
//   isGenericDict() INTERNAL ASSERT FAILED at ".../aten/src/ATen/core/ivalue_inl.h":2104, please
//   report a bug to PyTorch. Expected GenericDict but got None
// It does so for every OrderedDict, with or without `_metadata` (nn.Linear's state dict, one built
// by hand); only a plain dict loads. This reader also runs nothing from the file and bounds what
// the file may make it allocate (pickle.h; the allow-list of torch's globals: torch_archive.h).
//
// Files: pickle_machine.h (the machine's state), pickle_opcodes.cpp (what each opcode does), this
// file (the run to STOP, dict items, the value helpers), pickle_writer.cpp (PickleWriter).
#include "ltfit/formats/pickle.h"

#include "formats/pickle_machine.h"

namespace ltfit::pickle {

namespace detail {

void clear_containers(std::vector<ValuePtr>& containers) {
  for (const ValuePtr& c : containers) {
    c->items.clear();
    c->entries.clear();
  }
}

namespace {

// A dict key's identity for the index: strings and ints, as Python compares them.
bool index_key(const PickleValue& key, std::string& out) {
  if (key.kind == PickleValue::Kind::kString) {
    out.assign(1, 's').append(key.text);
    return true;
  }
  if (key.kind == PickleValue::Kind::kInt || key.kind == PickleValue::Kind::kBool) {
    out.assign(1, 'i').append(std::to_string(key.integer));
    return true;
  }
  return false;  // other keys (tuples, floats) are rare: appended without an index
}

}  // namespace

void Machine::set_item(const ValuePtr& dict, ValuePtr key, ValuePtr value) {
  if (dict->kind != Kind::kDict) {
    throw PickleError(std::string("SETITEM on a ") + kind_name(dict->kind) + ", not a dict");
  }
  budget_.charge(kEntryBytes, "unpickled dicts");
  // Python replaces the value of an equal key, keeping its place.
  if (index_key(*key, key_scratch_)) {
    budget_.charge(key_scratch_.size(), "unpickled dicts");
    auto& index = keys_[dict.get()];
    const auto [it, added] = index.emplace(key_scratch_, dict->entries.size());
    if (!added) {
      dict->entries[it->second].second = std::move(value);
      return;
    }
  }
  dict->entries.emplace_back(std::move(key), std::move(value));
}

std::unique_ptr<Unpickled> Machine::run() {
  while (pos_ < data_.size()) {
    const auto op = std::uint8_t(data_[pos_++]);
    if (!step(op)) {
      if (stack_.size() != 1 || !marks_.empty()) throw PickleError("pickle STOP with a bad stack");
      return std::make_unique<Unpickled>(stack_.back(), std::move(containers_));
    }
  }
  throw PickleError("truncated pickle (no STOP opcode)");
}

}  // namespace detail

using Kind = PickleValue::Kind;

ValuePtr make_value(PickleValue::Kind kind) {
  auto v = std::make_shared<PickleValue>();
  v->kind = kind;
  return v;
}

const char* kind_name(PickleValue::Kind kind) {
  switch (kind) {
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "string";
    case Kind::kTuple:
      return "tuple";
    case Kind::kList:
      return "list";
    case Kind::kDict:
      return "dict";
    case Kind::kGlobal:
      return "global";
    case Kind::kStorage:
      return "storage";
    case Kind::kTensor:
      return "tensor";
    case Kind::kObject:
      return "object";
  }
  return "?";
}

Unpickled::~Unpickled() { detail::clear_containers(containers_); }

std::unique_ptr<Unpickled> unpickle(std::string_view data, const PickleHooks& hooks,
                                    ReadBudget& budget) {
  return detail::Machine(data, hooks, budget).run();
}

const PickleValue* find_entry(const PickleValue& dict, std::string_view key) {
  for (const auto& [k, v] : dict.entries) {
    if (k->kind == Kind::kString && k->text == key) return v.get();
  }
  return nullptr;
}

}  // namespace ltfit::pickle
