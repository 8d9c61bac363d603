// PickleWriter (pickle.h): protocol-2 opcodes, composed by the caller as Python's pickler would.
#include "ltfit/formats/pickle.h"

#include <cstring>

namespace ltfit::pickle {

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
void PickleWriter::byte_string(std::string_view bytes) {
  if (bytes.size() < 0x100) {
    out_.push_back('U');
    append_le(out_, bytes.size(), 1);
  } else {
    out_.push_back('T');
    append_le(out_, bytes.size(), 4);
  }
  out_.append(bytes);
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
void PickleWriter::build() { out_.push_back('b'); }
void PickleWriter::persistent_id() { out_.push_back('Q'); }
std::string PickleWriter::finish() {
  out_.push_back('.');
  return std::move(out_);
}

}  // namespace ltfit::pickle
