// The pickle machine's state (private to src/util): the stack, marks, memo and the budget every
// object is charged to. pickle.cpp runs it to STOP; pickle_opcodes.cpp holds what each opcode
// does to this state. Not thread-safe per instance.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ltfit/formats/pickle.h"
#include "ltfit/util/read_limits.h"

namespace ltfit::pickle::detail {

// Deeper MARK nesting than any state dict needs; bounds the stack of a crafted file.
inline constexpr std::size_t kMaxMarkDepth = 10000;
// Budget charges besides kValueBytes per object (pickle.h), upper bounds of what each costs.
inline constexpr std::uint64_t kSlotBytes = 16;   // a ValuePtr in the stack, a tuple or a list
inline constexpr std::uint64_t kEntryBytes = 96;  // a dict entry and its slot in the key index
inline constexpr std::uint64_t kMemoBytes = 64;   // a memo entry

// The text opcodes' forms (pickle_text.cpp); each throws PickleError for a malformed one.
// A decimal int64 (an optional sign, then digits); `opcode` names it in the message.
std::int64_t parse_decimal(std::string_view text, const char* opcode);
// A STRING opcode's bytes: Python 2's quoted repr of a str, with its escapes.
std::string unquote(std::string_view line);
// A UNICODE opcode's text as UTF-8: raw-unicode-escape (Latin-1 bytes, \uXXXX, \UXXXXXXXX).
std::string raw_unicode(std::string_view line);

// Empties every container in `containers`, breaking any reference cycle among them.
void clear_containers(std::vector<ValuePtr>& containers);

// Runs one pickle to its STOP (what it refuses and charges: pickle.h).
class Machine {
 public:
  using Kind = PickleValue::Kind;

  Machine(std::string_view data, const PickleHooks& hooks, ReadBudget& budget)
      : data_(data), hooks_(hooks), budget_(budget) {}
  ~Machine() { clear_containers(containers_); }
  std::unique_ptr<Unpickled> run();

 private:
  // Returns false at STOP.
  bool step(std::uint8_t op);
  bool step_strings(std::uint8_t op);
  bool step_objects(std::uint8_t op);
  bool step_containers(std::uint8_t op);
  bool step_items(std::uint8_t op);
  bool step_memo(std::uint8_t op);
  bool step_text(std::uint8_t op);

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
  // A LONG1/LONG4 number of `n` little-endian two's complement bytes.
  std::int64_t read_long(std::uint64_t n, const char* opcode) {
    if (n > 8) {
      throw PickleError(std::string("pickle ") + opcode + " of " + std::to_string(n) +
                        " bytes overflows int64");
    }
    std::uint64_t v = n == 0 ? 0 : read_le(std::size_t(n));
    if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~std::uint64_t(0) << (8 * n);
    return std::int64_t(v);
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
    if (v->kind == Kind::kTuple || v->kind == Kind::kList || v->kind == Kind::kDict ||
        v->kind == Kind::kObject) {
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

}  // namespace ltfit::pickle::detail
