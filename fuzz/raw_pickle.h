// A byte-level pickle emitter for hand-made seeds: every opcode the reader knows, including the
// ones ltfit's PickleWriter never writes (memo, protocol 4 framing, legacy strings), so the seeds
// reach them. Seeds only; no validation.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>

namespace ltfit::fuzz {

class RawPickle {
 public:
  explicit RawPickle(int protocol = 2) { op(0x80).byte(protocol); }

  RawPickle& op(int opcode) { return byte(opcode); }
  RawPickle& byte(int v) {
    out_.push_back(static_cast<char>(v));
    return *this;
  }
  RawPickle& le(std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) byte(int((v >> (8 * i)) & 0xff));
    return *this;
  }
  RawPickle& raw(std::string_view bytes) {
    out_.append(bytes);
    return *this;
  }
  // SHORT_BINUNICODE or BINUNICODE.
  RawPickle& str(std::string_view text) {
    if (text.size() < 256) return op(0x8c).byte(int(text.size())).raw(text);
    return op('X').le(text.size(), 4).raw(text);
  }
  // BININT1, BININT2, BININT or LONG1, as Python's pickler picks.
  RawPickle& integer(std::int64_t v) {
    if (v >= 0 && v < 256) return op('K').byte(int(v));
    if (v >= 0 && v < 65536) return op('M').le(std::uint64_t(v), 2);
    if (v >= INT32_MIN && v <= INT32_MAX) return op('J').le(std::uint32_t(std::int32_t(v)), 4);
    return op(0x8a).byte(8).le(std::uint64_t(v), 8);
  }
  RawPickle& real(double v) {  // BINFLOAT, big-endian
    std::uint64_t bits;
    std::memcpy(&bits, &v, 8);
    op('G');
    for (int i = 7; i >= 0; --i) byte(int((bits >> (8 * i)) & 0xff));
    return *this;
  }
  RawPickle& global(std::string_view module, std::string_view name) {
    return op('c').raw(module).raw("\n").raw(name).raw("\n");
  }
  RawPickle& mark() { return op('('); }
  RawPickle& tuple() { return op('t'); }
  RawPickle& reduce() { return op('R'); }
  RawPickle& put(int index) { return op('q').byte(index); }
  RawPickle& get(int index) { return op('h').byte(index); }
  RawPickle& ints(std::initializer_list<std::int64_t> values) {  // a tuple of ints
    mark();
    for (std::int64_t v : values) integer(v);
    return tuple();
  }
  // persistent id ('storage', torch.<storage>, key, 'cpu', numel)
  RawPickle& storage(std::string_view storage, std::string_view key, std::int64_t numel) {
    mark().str("storage").global("torch", storage).str(key).str("cpu").integer(numel).tuple();
    return op('Q');
  }
  // torch._utils._rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())
  RawPickle& tensor(std::string_view storage_type, std::string_view key, std::int64_t numel,
                    std::int64_t offset, std::initializer_list<std::int64_t> size,
                    std::initializer_list<std::int64_t> stride) {
    global("torch._utils", "_rebuild_tensor_v2").mark();
    storage(storage_type, key, numel).integer(offset).ints(size).ints(stride).op(0x89);
    global("collections", "OrderedDict").op(')').reduce();
    return tuple().reduce();
  }
  std::string stop() const { return out_ + "."; }

 private:
  std::string out_;
};

}  // namespace ltfit::fuzz
