// list_tar_members and ustar_archive (tar_reader.h). The header layout follows POSIX's ustar
// (pax(1), "ustar Interchange Format"): name 0..99, mode 100, uid 108, gid 116, size 124..135,
// mtime 136, checksum 148..155, type flag 156, link name 157, magic 257 ("ustar"), prefix 345..499.
#include "data/tar_reader.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "data/regular_file.h"
#include "ltfit/util/error.h"

namespace ltfit::layouts {

namespace {

constexpr std::size_t kBlock = 512;
constexpr std::size_t kMaxNameBytes = 4096;
constexpr std::uint64_t kMaxPaxBytes = 1 << 20;

using Header = std::array<std::uint8_t, kBlock>;

[[noreturn]] void malformed(const std::string& path, std::uint64_t at, const std::string& what) {
  throw DataError("'" + path + "' is not a readable tar archive (layout shards): " + what +
                      " at byte " + std::to_string(at),
                  "rewrite the shard (tar, WebDataset's ShardWriter, Python's tarfile)");
}

std::string field_text(const Header& h, std::size_t at, std::size_t length) {
  const auto* begin = reinterpret_cast<const char*>(h.data() + at);
  return std::string(begin, strnlen(begin, length));
}

// An octal number field (spaces and NULs around it), or GNU's base-256 (first byte 0x80).
bool number_field(const Header& h, std::size_t at, std::size_t length, std::uint64_t* out) {
  std::uint64_t v = 0;
  if ((h[at] & 0x80) != 0) {
    if (h[at] != 0x80) return false;  // negative or over 2^63
    for (std::size_t i = 1; i < length; ++i) {
      if (v >> 56 != 0) return false;
      v = (v << 8) | h[at + i];
    }
    *out = v;
    return true;
  }
  std::size_t i = at;
  const std::size_t end = at + length;
  while (i < end && h[i] == ' ') ++i;
  bool digits = false;
  for (; i < end && h[i] >= '0' && h[i] <= '7'; ++i) {
    if (v >> 60 != 0) return false;
    v = v * 8 + (h[i] - '0');
    digits = true;
  }
  for (; i < end; ++i) {
    if (h[i] != ' ' && h[i] != 0) return false;
  }
  *out = v;
  return digits;
}

bool checksum_ok(const Header& h) {
  std::uint64_t stored = 0;
  if (!number_field(h, 148, 8, &stored)) return false;
  std::uint64_t unsigned_sum = 0;
  std::int64_t signed_sum = 0;
  for (std::size_t i = 0; i < kBlock; ++i) {
    const std::uint8_t b = (i >= 148 && i < 156) ? ' ' : h[i];
    unsigned_sum += b;
    signed_sum += static_cast<std::int8_t>(b);
  }
  return stored == unsigned_sum || static_cast<std::int64_t>(stored) == signed_sum;
}

bool all_zero(const Header& h) {
  return std::all_of(h.begin(), h.end(), [](std::uint8_t b) { return b == 0; });
}

std::uint64_t padded(std::uint64_t size) { return (size + kBlock - 1) / kBlock * kBlock; }

// What pax records override for the next member: "LEN key=value\n" records.
struct PaxOverrides {
  std::string path;
  bool has_size = false;
  std::uint64_t size = 0;
};

void parse_pax(const std::string& text, const std::string& file, std::uint64_t at,
               PaxOverrides& out) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t length = 0, i = pos;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9' && length < text.size(); ++i) {
      length = length * 10 + static_cast<std::size_t>(text[i] - '0');
    }
    if (i == pos || i >= text.size() || text[i] != ' ' || length <= i - pos + 1 ||
        length > text.size() - pos || text[pos + length - 1] != '\n') {
      malformed(file, at, "a malformed pax record");
    }
    const std::string record = text.substr(i + 1, pos + length - 1 - (i + 1));
    const std::size_t eq = record.find('=');
    if (eq == std::string::npos) malformed(file, at, "a pax record without '='");
    const std::string key = record.substr(0, eq);
    const std::string value = record.substr(eq + 1);
    if (key == "path") {
      if (value.size() > kMaxNameBytes) malformed(file, at, "a pax path over 4 KiB");
      out.path = value;
    } else if (key == "size") {
      std::uint64_t v = 0;
      if (value.empty() || value.size() > 18) malformed(file, at, "a pax size out of range");
      for (char c : value) {
        if (c < '0' || c > '9') malformed(file, at, "a pax size that is not a number");
        v = v * 10 + static_cast<std::uint64_t>(c - '0');
      }
      out.has_size = true;
      out.size = v;
    }
    pos += length;
  }
}

// A regular member's name: the pax path, else the GNU long name, else ustar's prefix/name; a
// leading "./" dropped.
std::string member_name(const Header& h, const PaxOverrides& pax, const std::string& long_name) {
  std::string name = !pax.path.empty()    ? pax.path
                     : !long_name.empty() ? long_name
                                          : field_text(h, 0, 100);
  const std::string prefix = field_text(h, 345, 155);
  if (pax.path.empty() && long_name.empty() && !prefix.empty() &&
      field_text(h, 257, 5) == "ustar") {
    name = prefix + "/" + name;
  }
  while (name.rfind("./", 0) == 0) name.erase(0, 2);
  return name;
}

}  // namespace

FileHandle open_tar(const std::string& path, std::uint64_t* size) {
  std::string error;
  FileHandle fd(open_regular_file(path, size, &error));
  if (fd.get() < 0) {
    throw DataError("cannot read shard '" + path + "' (layout shards): " + error,
                    "check data.root and data.shards");
  }
  return fd;
}

std::vector<TarMember> list_tar_members(const std::string& path, const FileHandle& fd,
                                        std::uint64_t file_size) {
  const auto read_bytes = [&](std::uint64_t at, std::uint64_t n, const char* what) {
    if (n > file_size || at > file_size - n)
      malformed(path, at, std::string(what) + " past the end");
    std::string out(static_cast<std::size_t>(n), '\0');
    if (read_at(fd.get(), path, at, out.size(), reinterpret_cast<std::uint8_t*>(out.data())) !=
        out.size()) {
      malformed(path, at, "a short read");
    }
    return out;
  };
  std::vector<TarMember> members;
  std::string long_name;
  PaxOverrides pax;
  Header h{};
  for (std::uint64_t at = 0; at + kBlock <= file_size;) {
    const std::string block = read_bytes(at, kBlock, "a header");
    std::memcpy(h.data(), block.data(), kBlock);
    if (all_zero(h)) break;  // the end-of-archive blocks
    if (!checksum_ok(h)) malformed(path, at, "a header whose checksum does not match");
    std::uint64_t size = 0;
    if (!number_field(h, 124, 12, &size)) malformed(path, at, "a header with a malformed size");
    const char type = static_cast<char>(h[156]);
    if (pax.has_size && type != 'x' && type != 'g' && type != 'L') size = pax.size;
    const std::uint64_t data = at + kBlock;
    if (size > file_size || data > file_size - size) malformed(path, at, "a member past the end");
    if (type == 'L') {
      if (size > kMaxNameBytes) malformed(path, at, "a long name over 4 KiB");
      long_name = read_bytes(data, size, "a long name");
      long_name.resize(strnlen(long_name.c_str(), long_name.size()));
    } else if (type == 'x') {
      if (size > kMaxPaxBytes) malformed(path, at, "a pax header over 1 MiB");
      parse_pax(read_bytes(data, size, "a pax header"), path, at, pax);
    } else if (type == 'g') {
      // global pax records: nothing ltfit uses
    } else {
      if (type == '0' || type == '\0' || type == '7') {
        std::string name = member_name(h, pax, long_name);
        if (members.size() >= kMaxTarMembers) {
          malformed(path, at, "more than " + std::to_string(kMaxTarMembers) + " members");
        }
        if (!name.empty()) members.push_back({std::move(name), data, size});
      }
      long_name.clear();
      pax = {};
    }
    at = data + padded(size);
  }
  return members;
}

std::string ustar_archive(const std::vector<std::pair<std::string, std::string>>& members) {
  std::string out;
  for (const auto& [name, bytes] : members) {
    if (name.empty() || name.size() > 100) {
      throw std::invalid_argument("ustar_archive: a member name of 1 to 100 bytes, not '" + name +
                                  "'");
    }
    Header h{};
    std::memcpy(h.data(), name.data(), std::min<std::size_t>(name.size(), 100));
    std::snprintf(reinterpret_cast<char*>(h.data() + 100), 8, "%07o", 0644);
    std::snprintf(reinterpret_cast<char*>(h.data() + 108), 8, "%07o", 0);
    std::snprintf(reinterpret_cast<char*>(h.data() + 116), 8, "%07o", 0);
    std::snprintf(reinterpret_cast<char*>(h.data() + 124), 12, "%011llo",
                  static_cast<unsigned long long>(bytes.size()));
    std::snprintf(reinterpret_cast<char*>(h.data() + 136), 12, "%011o", 0);
    h[156] = '0';
    std::memcpy(h.data() + 257,
                "ustar\0"
                "00",
                8);
    std::memset(h.data() + 148, ' ', 8);
    unsigned sum = 0;
    for (std::uint8_t b : h) sum += b;
    std::snprintf(reinterpret_cast<char*>(h.data() + 148), 8, "%06o", sum);
    h[155] = ' ';
    out.append(reinterpret_cast<const char*>(h.data()), kBlock);
    out += bytes;
    out.append(padded(bytes.size()) - bytes.size(), '\0');
  }
  out.append(2 * kBlock, '\0');
  return out;
}

}  // namespace ltfit::layouts
