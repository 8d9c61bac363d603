#include "model/pickle.h"

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

class Machine {
 public:
  Machine(std::string_view data, const PickleHooks& hooks) : data_(data), hooks_(hooks) {}
  ~Machine() { clear_containers(containers_); }
  Unpickled run();

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

  void push(ValuePtr v) {
    if (v->kind == Kind::kTuple || v->kind == Kind::kList || v->kind == Kind::kDict) {
      containers_.push_back(v);  // DUP, BINGET re-push one: harmless duplicates
    }
    stack_.push_back(std::move(v));
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

  static void set_item(PickleValue& dict, ValuePtr key, ValuePtr value);
  ValuePtr memo_get(std::uint64_t index) const {
    auto it = memo_.find(index);
    if (it == memo_.end()) throw PickleError("pickle memo has no entry " + std::to_string(index));
    return it->second;
  }

  std::string_view data_;
  const PickleHooks& hooks_;
  std::size_t pos_ = 0;
  std::vector<ValuePtr> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint64_t, ValuePtr> memo_;
  std::vector<ValuePtr> containers_;  // every container made, see Unpickled
};

ValuePtr integer_value(std::int64_t v, Kind kind = Kind::kInt) {
  ValuePtr out = make_value(kind);
  out->integer = v;
  return out;
}

ValuePtr string_value(std::string_view s) {
  ValuePtr out = make_value(Kind::kString);
  out->text = std::string(s);
  return out;
}

ValuePtr sequence_value(Kind kind, std::vector<ValuePtr> items) {
  ValuePtr out = make_value(kind);
  out->items = std::move(items);
  return out;
}

void Machine::set_item(PickleValue& dict, ValuePtr key, ValuePtr value) {
  if (dict.kind != Kind::kDict) {
    throw PickleError(std::string("SETITEM on a ") + kind_name(dict.kind) + ", not a dict");
  }
  // Python replaces an equal string key; other key kinds are rare enough to just append.
  if (key->kind == Kind::kString) {
    for (auto& entry : dict.entries) {
      if (entry.first->kind == Kind::kString && entry.first->text == key->text) {
        entry.second = std::move(value);
        return;
      }
    }
  }
  dict.entries.emplace_back(std::move(key), std::move(value));
}

Unpickled Machine::run() {
  while (pos_ < data_.size()) {
    const auto op = std::uint8_t(data_[pos_++]);
    if (!step(op)) {
      if (stack_.size() != 1 || !marks_.empty()) throw PickleError("pickle STOP with a bad stack");
      return Unpickled(stack_.back(), std::move(containers_));
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
      push(make_value(Kind::kNone));
      return true;
    case 0x88:
      push(integer_value(1, Kind::kBool));
      return true;  // NEWTRUE
    case 0x89:
      push(integer_value(0, Kind::kBool));
      return true;  // NEWFALSE
    case 'J':
      push(integer_value(std::int32_t(std::uint32_t(read_le(4)))));
      return true;  // BININT
    case 'K':
      push(integer_value(std::int64_t(read_le(1))));
      return true;  // BININT1
    case 'M':
      push(integer_value(std::int64_t(read_le(2))));
      return true;  // BININT2
    case 0x8a: {    // LONG1: little-endian two's complement
      const auto n = std::size_t(read_le(1));
      if (n > 8)
        throw PickleError("pickle LONG1 of " + std::to_string(n) + " bytes overflows int64");
      std::uint64_t v = n == 0 ? 0 : read_le(n);
      if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~std::uint64_t(0) << (8 * n);
      push(integer_value(std::int64_t(v)));
      return true;
    }
    case 'G': {  // BINFLOAT: big-endian double
      std::string_view b = take(8);
      std::uint64_t bits = 0;
      for (char c : b) bits = (bits << 8) | std::uint8_t(c);
      ValuePtr v = make_value(Kind::kFloat);
      std::memcpy(&v->real, &bits, sizeof bits);
      push(std::move(v));
      return true;
    }
    case 'X':
      push(string_value(take(read_le(4))));
      return true;  // BINUNICODE
    case 0x8c:
      push(string_value(take(read_le(1))));
      return true;  // SHORT_BINUNICODE
    case 0x8d:
      push(string_value(take(read_le(8))));
      return true;  // BINUNICODE8
    case 'T':
      push(string_value(take(read_le(4))));
      return true;  // BINSTRING
    case 'U':
      push(string_value(take(read_le(1))));
      return true;  // SHORT_BINSTRING
    case 'B':
      push(string_value(take(read_le(4))));
      return true;  // BINBYTES
    case 'C':
      push(string_value(take(read_le(1))));
      return true;  // SHORT_BINBYTES
    case 'c': {     // GLOBAL "module\nname\n"
      const std::string module(read_line());
      const std::string name(read_line());
      ValuePtr g = make_value(Kind::kGlobal);
      g->text = module + "." + name;
      push(std::move(g));
      return true;
    }
    case 0x93: {  // STACK_GLOBAL
      ValuePtr name = pop_kind(Kind::kString, "STACK_GLOBAL name");
      ValuePtr module = pop_kind(Kind::kString, "STACK_GLOBAL module");
      ValuePtr g = make_value(Kind::kGlobal);
      g->text = module->text + "." + name->text;
      push(std::move(g));
      return true;
    }
    case 'R':     // REDUCE
    case 0x81: {  // NEWOBJ: cls, args -> cls.__new__(cls, *args); same meaning for our globals
      ValuePtr args = pop_kind(Kind::kTuple, "REDUCE arguments");
      ValuePtr callable = pop_kind(Kind::kGlobal, "REDUCE callable");
      push(hooks_.reduce(callable->text, args));
      return true;
    }
    case 'b':
      pop();
      return true;  // BUILD: sets state (OrderedDict._metadata): ignored
    case 'Q':
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
      push(make_value(Kind::kDict));
      return true;  // EMPTY_DICT
    case ']':
      push(make_value(Kind::kList));
      return true;  // EMPTY_LIST
    case ')':
      push(sequence_value(Kind::kTuple, {}));
      return true;  // EMPTY_TUPLE
    case 't':
      push(sequence_value(Kind::kTuple, pop_mark()));
      return true;  // TUPLE
    case 'l':
      push(sequence_value(Kind::kList, pop_mark()));
      return true;  // LIST
    case 0x85:
    case 0x86:
    case 0x87: {  // TUPLE1/2/3
      std::vector<ValuePtr> items(op - 0x84);
      for (auto it = items.rbegin(); it != items.rend(); ++it) *it = pop();
      push(sequence_value(Kind::kTuple, std::move(items)));
      return true;
    }
    case 'd':
    case 'u': {  // DICT, SETITEMS
      std::vector<ValuePtr> items = pop_mark();
      if (items.size() % 2 != 0) throw PickleError("pickle dict items are not key/value pairs");
      ValuePtr dict = op == 'd' ? make_value(Kind::kDict) : top();
      for (std::size_t i = 0; i < items.size(); i += 2) set_item(*dict, items[i], items[i + 1]);
      if (op == 'd') push(std::move(dict));
      return true;
    }
    case 's': {  // SETITEM
      ValuePtr value = pop();
      ValuePtr key = pop();
      set_item(*top(), std::move(key), std::move(value));
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
      memo_[read_le(1)] = top();
      return true;  // BINPUT
    case 'r':
      memo_[read_le(4)] = top();
      return true;  // LONG_BINPUT
    case 0x94:
      memo_[memo_.size()] = top();
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
    case Kind::kTensor:
      return "tensor";
    case Kind::kOpaque:
      return "unsupported object";
  }
  return "?";
}

Unpickled::~Unpickled() { clear_containers(containers_); }

Unpickled unpickle(std::string_view data, const PickleHooks& hooks) {
  return Machine(data, hooks).run();
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
void PickleWriter::boolean(bool value) { out_.push_back(value ? '\x88' : '\x89'); }
void PickleWriter::empty_tuple() { out_.push_back(')'); }
void PickleWriter::tuple() { out_.push_back('t'); }
void PickleWriter::reduce() { out_.push_back('R'); }
void PickleWriter::persistent_id() { out_.push_back('Q'); }
void PickleWriter::set_items() { out_.push_back('u'); }
std::string PickleWriter::finish() {
  out_.push_back('.');
  return std::move(out_);
}

}  // namespace ltfit::pickle
