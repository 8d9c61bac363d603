#include "ltfit/model/pickle.h"

#include <cstring>
#include <unordered_map>

namespace ltfit::pickle {

namespace {

using Kind = PickleValue::Kind;

void clear_containers(std::vector<ValuePtr>& containers) {
  for (const ValuePtr& c : containers) {
    c->items.clear();
    c->entries.clear();
  }
}

// Deeper MARK nesting than any state dict needs; bounds the stack of a crafted file.
constexpr std::size_t kMaxMarkDepth = 10000;
// Budget charges besides kValueBytes per object (pickle.h), upper bounds of what each costs.
constexpr std::uint64_t kSlotBytes = 16;   // a ValuePtr in the stack, a tuple or a list
constexpr std::uint64_t kEntryBytes = 96;  // a dict entry and its slot in the key index
constexpr std::uint64_t kMemoBytes = 64;   // a memo entry

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

class Machine {
 public:
  Machine(std::string_view data, const PickleHooks& hooks, ReadBudget& budget)
      : data_(data), hooks_(hooks), budget_(budget) {}
  ~Machine() { clear_containers(containers_); }
  std::unique_ptr<Unpickled> run();

 private:
  // Returns false at STOP.
  bool step(std::uint8_t op);
  bool step_containers(std::uint8_t op);
  bool step_memo(std::uint8_t op);

  std::string_view take(std::size_t n) {
    if (n > data_.size() - pos_) throw PickleError("truncated pickle (ends inside an opcode)");
    std::string_view bytes = data_.substr(pos_, n);
    pos_ += n;
    return bytes;
  }
  std::uint64_t read_le(std::size_t n) {
    std::string_view b = take(n);
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= std::uint64_t(std::uint8_t(b[i])) << (8 * i);
    return v;
  }
  std::string_view read_line() {
    const std::size_t end = data_.find('\n', pos_);
    if (end == std::string_view::npos) throw PickleError("truncated pickle (unterminated line)");
    std::string_view line = data_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return line;
  }

  // A new object, charged to the budget.
  ValuePtr make(Kind kind) {
    budget_.charge(kValueBytes + kSlotBytes, "unpickled objects");
    return make_value(kind);
  }
  ValuePtr make_string(std::string_view s) {
    budget_.charge(s.size(), "unpickled strings");
    ValuePtr out = make(Kind::kString);
    out->text = std::string(s);
    return out;
  }
  ValuePtr make_int(std::int64_t v, Kind kind = Kind::kInt) {
    ValuePtr out = make(kind);
    out->integer = v;
    return out;
  }
  ValuePtr make_sequence(Kind kind, std::vector<ValuePtr> items) {
    budget_.charge(items.size() * kSlotBytes, "unpickled containers");
    ValuePtr out = make(kind);
    out->items = std::move(items);
    return out;
  }
  // Pushes an existing or new value (the stack slot is charged on every push: a flood of DUPs
  // costs memory too).
  void push(ValuePtr v) {
    budget_.charge(kSlotBytes, "the pickle stack");
    if (v->kind == Kind::kTuple || v->kind == Kind::kList || v->kind == Kind::kDict) {
      budget_.charge(kSlotBytes, "the pickle stack");
      containers_.push_back(v);  // DUP, BINGET re-push one: harmless duplicates
    }
    stack_.push_back(std::move(v));
  }
  void memo_put(std::uint64_t index) {
    budget_.charge(kMemoBytes, "the pickle memo");
    memo_[index] = top();
  }
  ValuePtr global_value(std::string name) {
    if (!hooks_.global_allowed || !hooks_.global_allowed(name)) {  // none given: none allowed
      throw PickleError("refused global '" + name +
                        "': only tensors and plain values are loaded (like Python's "
                        "torch.load(weights_only=True)); nothing in a file is run");
    }
    ValuePtr g = make_string(name);
    g->kind = Kind::kGlobal;
    return g;
  }
  ValuePtr pop() {
    if (stack_.size() <= mark_floor()) throw PickleError("pickle stack underflow");
    ValuePtr v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  ValuePtr& top() {
    if (stack_.size() <= mark_floor()) throw PickleError("pickle stack underflow");
    return stack_.back();
  }
  std::size_t mark_floor() const { return marks_.empty() ? 0 : marks_.back(); }
  std::vector<ValuePtr> pop_mark() {
    if (marks_.empty()) throw PickleError("pickle opcode needs a MARK, none is set");
    const std::size_t start = marks_.back();
    marks_.pop_back();
    std::vector<ValuePtr> items(std::make_move_iterator(stack_.begin() + std::ptrdiff_t(start)),
                                std::make_move_iterator(stack_.end()));
    stack_.resize(start);
    return items;
  }
  ValuePtr pop_kind(Kind kind, const char* what) {
    ValuePtr v = pop();
    if (v->kind != kind) {
      throw PickleError(std::string(what) + ": expected a " + kind_name(kind) + ", got a " +
                        kind_name(v->kind));
    }
    return v;
  }

  void set_item(const ValuePtr& dict, ValuePtr key, ValuePtr value);
  ValuePtr memo_get(std::uint64_t index) const {
    auto it = memo_.find(index);
    if (it == memo_.end()) throw PickleError("pickle memo has no entry " + std::to_string(index));
    return it->second;
  }

  std::string_view data_;
  const PickleHooks& hooks_;
  ReadBudget& budget_;
  std::size_t pos_ = 0;
  std::vector<ValuePtr> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint64_t, ValuePtr> memo_;
  std::vector<ValuePtr> containers_;  // every container made, see Unpickled
  // Per dict: index_key -> entry position, so that SETITEMS is linear, not quadratic.
  std::unordered_map<const PickleValue*, std::unordered_map<std::string, std::size_t>> keys_;
  std::string key_scratch_;
};

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

bool Machine::step(std::uint8_t op) {
  switch (op) {
    case 0x80: {  // PROTO
      const auto proto = read_le(1);
      if (proto > 5) throw PickleError("unsupported pickle protocol " + std::to_string(proto));
      return true;
    }
    case 0x95:
      take(8);
      return true;  // FRAME: a length hint only
    case '.':
      return false;  // STOP
    case 'N':
      push(make(Kind::kNone));
      return true;
    case 0x88:
      push(make_int(1, Kind::kBool));
      return true;  // NEWTRUE
    case 0x89:
      push(make_int(0, Kind::kBool));
      return true;  // NEWFALSE
    case 'J':
      push(make_int(std::int32_t(std::uint32_t(read_le(4)))));
      return true;  // BININT
    case 'K':
      push(make_int(std::int64_t(read_le(1))));
      return true;  // BININT1
    case 'M':
      push(make_int(std::int64_t(read_le(2))));
      return true;  // BININT2
    case 0x8a: {    // LONG1: little-endian two's complement
      const auto n = std::size_t(read_le(1));
      if (n > 8)
        throw PickleError("pickle LONG1 of " + std::to_string(n) + " bytes overflows int64");
      std::uint64_t v = n == 0 ? 0 : read_le(n);
      if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~std::uint64_t(0) << (8 * n);
      push(make_int(std::int64_t(v)));
      return true;
    }
    case 'G': {  // BINFLOAT: big-endian double
      std::string_view b = take(8);
      std::uint64_t bits = 0;
      for (char c : b) bits = (bits << 8) | std::uint8_t(c);
      ValuePtr v = make(Kind::kFloat);
      std::memcpy(&v->real, &bits, sizeof bits);
      push(std::move(v));
      return true;
    }
    case 'X':
      push(make_string(take(read_le(4))));
      return true;  // BINUNICODE
    case 0x8c:
      push(make_string(take(read_le(1))));
      return true;  // SHORT_BINUNICODE
    case 0x8d:
      push(make_string(take(read_le(8))));
      return true;  // BINUNICODE8
    case 'T':
      push(make_string(take(read_le(4))));
      return true;  // BINSTRING
    case 'U':
      push(make_string(take(read_le(1))));
      return true;  // SHORT_BINSTRING
    case 'B':
      push(make_string(take(read_le(4))));
      return true;  // BINBYTES
    case 'C':
      push(make_string(take(read_le(1))));
      return true;  // SHORT_BINBYTES
    case 'c': {     // GLOBAL "module\nname\n"
      const std::string_view module = read_line();
      const std::string_view name = read_line();
      push(global_value(std::string(module) + "." + std::string(name)));
      return true;
    }
    case 0x93: {  // STACK_GLOBAL
      ValuePtr name = pop_kind(Kind::kString, "STACK_GLOBAL name");
      ValuePtr module = pop_kind(Kind::kString, "STACK_GLOBAL module");
      push(global_value(module->text + "." + name->text));
      return true;
    }
    case 'R':     // REDUCE
    case 0x81: {  // NEWOBJ: cls, args -> cls.__new__(cls, *args); same meaning for our globals
      ValuePtr args = pop_kind(Kind::kTuple, "REDUCE arguments");
      ValuePtr callable = pop_kind(Kind::kGlobal, "REDUCE callable");
      if (!hooks_.reduce) throw PickleError("pickle REDUCE: no global may be applied here");
      push(hooks_.reduce(callable->text, args));
      return true;
    }
    case 'b':
      pop();
      return true;  // BUILD: sets state (OrderedDict._metadata): ignored
    case 'Q':
      if (!hooks_.persistent_load)
        throw PickleError("pickle persistent ids are not supported here");
      push(hooks_.persistent_load(pop()));
      return true;  // BINPERSID
    default:
      return step_containers(op);
  }
}

bool Machine::step_containers(std::uint8_t op) {
  switch (op) {
    case '(':  // MARK
      if (marks_.size() >= kMaxMarkDepth) throw PickleError("pickle nests MARKs too deeply");
      marks_.push_back(stack_.size());
      return true;
    case '0':
      pop();
      return true;  // POP
    case '1':
      pop_mark();
      return true;  // POP_MARK
    case '2':
      push(top());
      return true;  // DUP
    case '}':
      push(make(Kind::kDict));
      return true;  // EMPTY_DICT
    case ']':
      push(make(Kind::kList));
      return true;  // EMPTY_LIST
    case ')':
      push(make_sequence(Kind::kTuple, {}));
      return true;  // EMPTY_TUPLE
    case 't':
      push(make_sequence(Kind::kTuple, pop_mark()));
      return true;  // TUPLE
    case 'l':
      push(make_sequence(Kind::kList, pop_mark()));
      return true;  // LIST
    case 0x85:
    case 0x86:
    case 0x87: {  // TUPLE1/2/3
      std::vector<ValuePtr> items(op - 0x84);
      for (auto it = items.rbegin(); it != items.rend(); ++it) *it = pop();
      push(make_sequence(Kind::kTuple, std::move(items)));
      return true;
    }
    case 'd':
    case 'u': {  // DICT, SETITEMS
      std::vector<ValuePtr> items = pop_mark();
      if (items.size() % 2 != 0) throw PickleError("pickle dict items are not key/value pairs");
      ValuePtr dict = op == 'd' ? make(Kind::kDict) : top();
      for (std::size_t i = 0; i < items.size(); i += 2) set_item(dict, items[i], items[i + 1]);
      if (op == 'd') push(std::move(dict));
      return true;
    }
    case 's': {  // SETITEM
      ValuePtr value = pop();
      ValuePtr key = pop();
      set_item(top(), std::move(key), std::move(value));
      return true;
    }
    case 'a':
    case 'e': {  // APPEND, APPENDS
      std::vector<ValuePtr> items;
      if (op == 'a')
        items.push_back(pop());
      else
        items = pop_mark();
      PickleValue& list = *top();
      if (list.kind != Kind::kList) {
        throw PickleError(std::string("APPEND to a ") + kind_name(list.kind) + ", not a list");
      }
      budget_.charge(items.size() * kSlotBytes, "unpickled lists");
      list.items.insert(list.items.end(), items.begin(), items.end());
      return true;
    }
    default:
      return step_memo(op);
  }
}

bool Machine::step_memo(std::uint8_t op) {
  switch (op) {
    case 'q':
      memo_put(read_le(1));
      return true;  // BINPUT
    case 'r':
      memo_put(read_le(4));
      return true;  // LONG_BINPUT
    case 0x94:
      memo_put(memo_.size());
      return true;  // MEMOIZE
    case 'h':
      push(memo_get(read_le(1)));
      return true;  // BINGET
    case 'j':
      push(memo_get(read_le(4)));
      return true;  // LONG_BINGET
    default: {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", op);
      throw PickleError("unsupported pickle opcode " + std::string(hex) + " at byte " +
                        std::to_string(pos_ - 1));
    }
  }
}

}  // namespace

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
  }
  return "?";
}

Unpickled::~Unpickled() { clear_containers(containers_); }

std::unique_ptr<Unpickled> unpickle(std::string_view data, const PickleHooks& hooks,
                                    ReadBudget& budget) {
  return Machine(data, hooks, budget).run();
}

const PickleValue* find_entry(const PickleValue& dict, std::string_view key) {
  for (const auto& [k, v] : dict.entries) {
    if (k->kind == Kind::kString && k->text == key) return v.get();
  }
  return nullptr;
}

// ---- writer --------------------------------------------------------------------------------

namespace {
void append_le(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
}
}  // namespace

PickleWriter::PickleWriter() { out_ = "\x80\x02"; }
void PickleWriter::mark() { out_.push_back('('); }
void PickleWriter::global(std::string_view module, std::string_view name) {
  out_.push_back('c');
  out_.append(module).push_back('\n');
  out_.append(name).push_back('\n');
}
void PickleWriter::string(std::string_view text) {
  out_.push_back('X');
  append_le(out_, text.size(), 4);
  out_.append(text);
}
void PickleWriter::integer(std::int64_t value) {
  if (value >= 0 && value < 0x100) {
    out_.push_back('K');
    append_le(out_, std::uint64_t(value), 1);
  } else if (value >= 0 && value < 0x10000) {
    out_.push_back('M');
    append_le(out_, std::uint64_t(value), 2);
  } else if (value >= INT32_MIN && value <= INT32_MAX) {
    out_.push_back('J');
    append_le(out_, std::uint64_t(value), 4);
  } else {
    out_.append("\x8a\x08");  // LONG1, 8 bytes
    append_le(out_, std::uint64_t(value), 8);
  }
}
void PickleWriter::real(double value) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  out_.push_back('G');
  for (int i = 7; i >= 0; --i) out_.push_back(char((bits >> (8 * i)) & 0xff));  // big-endian
}
void PickleWriter::boolean(bool value) { out_.push_back(value ? '\x88' : '\x89'); }
void PickleWriter::none() { out_.push_back('N'); }
void PickleWriter::empty_tuple() { out_.push_back(')'); }
void PickleWriter::tuple() { out_.push_back('t'); }
void PickleWriter::empty_list() { out_.push_back(']'); }
void PickleWriter::appends() { out_.push_back('e'); }
void PickleWriter::empty_dict() { out_.push_back('}'); }
void PickleWriter::set_items() { out_.push_back('u'); }
void PickleWriter::reduce() { out_.push_back('R'); }
void PickleWriter::persistent_id() { out_.push_back('Q'); }
std::string PickleWriter::finish() {
  out_.push_back('.');
  return std::move(out_);
}

}  // namespace ltfit::pickle
