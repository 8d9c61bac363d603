// What each pickle opcode does to the machine's state (pickle_machine.h): numbers, strings,
// globals, containers and their items, the memo, then protocol 0's text forms; anything else is
// refused. Opcode bytes and names follow
// CPython's Lib/pickletools.py.
#include "formats/pickle_machine.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ltfit::pickle::detail {

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
    case 0x8a:
      push(make_int(read_long(read_le(1), "LONG1")));
      return true;  // LONG1: little-endian two's complement
    case 'G': {     // BINFLOAT: big-endian double
      std::string_view b = take(8);
      std::uint64_t bits = 0;
      for (char c : b) bits = (bits << 8) | std::uint8_t(c);
      ValuePtr v = make(Kind::kFloat);
      std::memcpy(&v->real, &bits, sizeof bits);
      push(std::move(v));
      return true;
    }
    default:
      return step_strings(op);
  }
}

// Text and bytes: BINUNICODE (8), SHORT_BINUNICODE, BINSTRING, SHORT_BINSTRING, BINBYTES (8),
// SHORT_BINBYTES, BYTEARRAY8.
bool Machine::step_strings(std::uint8_t op) {
  switch (op) {
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
    case 0x8e:
    case 0x96:
      push(make_string(take(read_le(8))));
      return true;  // BINBYTES8, BYTEARRAY8 (protocol 5's in-band buffers)
    default:
      return step_objects(op);
  }
}

// Globals and what applies them: GLOBAL, STACK_GLOBAL, REDUCE, NEWOBJ, BUILD, BINPERSID.
bool Machine::step_objects(std::uint8_t op) {
  switch (op) {
    case 'c': {  // GLOBAL "module\nname\n"
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
    case 'b': {  // BUILD: sets an object's state; without a hook ignored (OrderedDict._metadata)
      ValuePtr state = pop();
      if (hooks_.build) {
        ValuePtr object = pop();
        push(hooks_.build(object, state));
      }
      return true;
    }
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
    default:
      return step_items(op);
  }
}

// Filling dicts and lists: DICT, SETITEMS, SETITEM, APPEND, APPENDS.
bool Machine::step_items(std::uint8_t op) {
  switch (op) {
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
    default:
      return step_text(op);
  }
}

// Protocols 0 and 1 (Python 2's cPickle wrote them by default): numbers, strings and memo
// indices as text lines.
bool Machine::step_text(std::uint8_t op) {
  switch (op) {
    case 'I': {  // INT: "01"/"00" are True/False
      const std::string_view line = read_line();
      if (line == "01" || line == "00") {
        push(make_int(line == "01" ? 1 : 0, Kind::kBool));
      } else {
        push(make_int(parse_decimal(line, "INT")));
      }
      return true;
    }
    case 'L': {  // LONG: decimal, Python 2 adds an 'L'
      std::string_view line = read_line();
      if (!line.empty() && line.back() == 'L') line.remove_suffix(1);
      push(make_int(parse_decimal(line, "LONG")));
      return true;
    }
    case 0x8b:
      push(make_int(read_long(read_le(4), "LONG4")));
      return true;  // LONG4: LONG1 with a 4-byte length
    case 'F': {     // FLOAT: a decimal line
      const std::string line(read_line());
      char* end = nullptr;
      const double real = std::strtod(line.c_str(), &end);
      if (line.empty() || end != line.c_str() + line.size()) {
        throw PickleError("pickle FLOAT is not a number");
      }
      ValuePtr v = make(Kind::kFloat);
      v->real = real;
      push(std::move(v));
      return true;
    }
    case 'S':
      push(make_string(unquote(read_line())));
      return true;  // STRING: a quoted Python 2 repr
    case 'V':
      push(make_string(raw_unicode(read_line())));
      return true;  // UNICODE: raw-unicode-escape
    case 'p':
      memo_put(std::uint64_t(parse_decimal(read_line(), "PUT")));
      return true;  // PUT
    case 'g':
      push(memo_get(std::uint64_t(parse_decimal(read_line(), "GET"))));
      return true;  // GET
    default: {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", op);
      throw PickleError("unsupported pickle opcode " + std::string(hex) + " at byte " +
                        std::to_string(pos_ - 1));
    }
  }
}

}  // namespace ltfit::pickle::detail
