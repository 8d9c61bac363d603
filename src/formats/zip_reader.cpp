// The zip reader (zip_archive.h): end records (zip64 too), central directory, local headers,
// STORED and DEFLATE records, CRC-32 checks, every offset and size bounds-checked and every
// allocation charged to a ReadBudget. Layouts: zip_format.h.
#include "formats/zip_archive.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "formats/zip_format.h"

namespace ltfit::zip {

namespace {

// Deflate cannot compress better than about 1032:1 (a 258-byte match in a 2-bit code); a record
// claiming more is malformed, whatever its budget.
constexpr std::uint64_t kMaxDeflateRatio = 1032;
constexpr std::uint64_t kEntryOverhead = sizeof(ZipEntry) + 64;  // entry + its name index slot

// Bounds-checked little-endian reads from the archive.
class Cursor {
 public:
  Cursor(std::string_view bytes, std::uint64_t at, std::uint64_t end, const char* what)
      : bytes_(bytes), at_(at), end_(end), what_(what) {
    if (end_ > bytes_.size() || at_ > end_) fail();
  }
  std::uint64_t le(int n) {
    if (std::uint64_t(n) > end_ - at_) fail();
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= std::uint64_t(std::uint8_t(bytes_[at_ + i])) << (8 * i);
    at_ += std::uint64_t(n);
    return v;
  }
  std::uint16_t u16() { return std::uint16_t(le(2)); }
  std::uint32_t u32() { return std::uint32_t(le(4)); }
  std::uint64_t u64() { return le(8); }
  std::string_view take(std::uint64_t n) {
    if (n > end_ - at_) fail();
    std::string_view s = bytes_.substr(at_, n);
    at_ += n;
    return s;
  }
  std::uint64_t at() const { return at_; }

 private:
  [[noreturn]] void fail() const {
    throw ZipError(std::string("truncated or malformed zip (") + what_ + " out of bounds)");
  }
  std::string_view bytes_;
  std::uint64_t at_, end_;
  const char* what_;
};

std::uint32_t u32_at(std::string_view bytes, std::uint64_t at) {
  return Cursor(bytes, at, bytes.size(), "signature").u32();
}

struct Directory {
  std::uint64_t offset = 0, size = 0, count = 0, end_of_directory = 0;
};

// The end-of-central-directory record: the last "PK\5\6" whose comment fits the file.
std::uint64_t find_end_record(std::string_view bytes) {
  if (bytes.size() < kEndSize) throw ZipError("not a zip archive (too short)");
  const std::uint64_t lowest = bytes.size() > kEndSize + k16 ? bytes.size() - kEndSize - k16 : 0;
  for (std::uint64_t at = bytes.size() - kEndSize + 1; at-- > lowest;) {
    if (u32_at(bytes, at) != kEndSignature) continue;
    const std::uint64_t comment = Cursor(bytes, at + 20, bytes.size(), "comment").u16();
    if (at + kEndSize + comment <= bytes.size()) return at;
  }
  throw ZipError("not a zip archive (no end of central directory record)");
}

Directory read_directory_location(std::string_view bytes) {
  const std::uint64_t end = find_end_record(bytes);
  Cursor c(bytes, end + 4, bytes.size(), "end record");
  const std::uint16_t disk = c.u16(), directory_disk = c.u16();
  const std::uint16_t count_on_disk = c.u16(), count = c.u16();
  Directory d;
  d.size = c.u32();
  d.offset = c.u32();
  d.count = count;
  d.end_of_directory = end;
  if (disk != 0 || directory_disk != 0 || count_on_disk != count) {
    throw ZipError("multi-part zip archives are not supported");
  }
  if (end >= kZip64LocatorSize &&
      u32_at(bytes, end - kZip64LocatorSize) == kZip64LocatorSignature) {
    Cursor loc(bytes, end - kZip64LocatorSize + 4, end, "zip64 locator");
    const std::uint32_t zip64_disk = loc.u32();
    const std::uint64_t zip64_end = loc.u64();
    if (zip64_disk != 0 || loc.u32() > 1)
      throw ZipError("multi-part zip archives are not supported");
    const std::uint64_t limit = end - kZip64LocatorSize;
    if (zip64_end > limit || limit - zip64_end < kZip64EndSize) {
      throw ZipError("truncated or malformed zip (zip64 end record out of bounds)");
    }
    Cursor z(bytes, zip64_end, limit, "zip64 end record");
    if (z.u32() != kZip64EndSignature) throw ZipError("malformed zip (bad zip64 end record)");
    z.u64();  // size of the record
    z.u16();  // version made by
    z.u16();  // version needed
    if (z.u32() != 0 || z.u32() != 0) throw ZipError("multi-part zip archives are not supported");
    const std::uint64_t on_disk = z.u64();
    d.count = z.u64();
    d.size = z.u64();
    d.offset = z.u64();
    if (on_disk != d.count) throw ZipError("multi-part zip archives are not supported");
    d.end_of_directory = zip64_end;
  } else if (count == k16 || d.size == k32 || d.offset == k32) {
    throw ZipError("malformed zip (zip64 values without a zip64 end record)");
  }
  if (d.offset > d.end_of_directory || d.size > d.end_of_directory - d.offset) {
    throw ZipError("truncated or malformed zip (central directory out of bounds)");
  }
  if (d.count > d.size / kCentralHeaderSize) {
    throw ZipError("malformed zip (" + std::to_string(d.count) + " records cannot fit in a " +
                   std::to_string(d.size) + "-byte central directory)");
  }
  return d;
}

// Applies the zip64 extended-information extra field to the values stored as 0xffffffff.
void apply_zip64_extra(std::string_view extra, ZipEntry& e, std::uint32_t usize,
                       std::uint32_t csize, std::uint32_t offset) {
  Cursor c(extra, 0, extra.size(), "extra field");
  bool found = false;
  while (c.at() + 4 <= extra.size()) {
    const std::uint16_t id = c.u16();
    const std::uint16_t size = c.u16();
    const std::string_view body = c.take(size);
    if (id != kZip64ExtraId) continue;
    found = true;
    Cursor f(body, 0, body.size(), "zip64 extra field");
    if (usize == k32) e.uncompressed_size = f.u64();
    if (csize == k32) e.compressed_size = f.u64();
    if (offset == k32) e.local_offset = f.u64();
  }
  if (!found && (usize == k32 || csize == k32 || offset == k32)) {
    throw ZipError("malformed zip (record '" + e.name + "' lacks its zip64 sizes)");
  }
}

std::string hex32(std::uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", v);
  return text;
}

// Inflates a raw deflate stream into exactly `size` bytes: a stream that ends early, runs past
// `size` or is corrupt throws. Works in chunks, since zlib counts in 32 bits.
std::string inflate_exactly(std::string_view in, std::uint64_t size, const std::string& name) {
  constexpr std::uint64_t kChunk = 1u << 30;
  std::string out(size, '\0');
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) throw ZipError("cannot start zlib");
  std::uint64_t in_done = 0, out_done = 0;
  bool too_long = false;
  int rc = Z_OK;
  for (;;) {
    const std::uint64_t in_chunk = std::min(in.size() - in_done, kChunk);
    const std::uint64_t out_chunk = std::min(size - out_done, kChunk);
    unsigned char probe = 0;  // once the output is full: one more byte would be too many
    const bool probing = out_chunk == 0;
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + in_done));
    zs.avail_in = uInt(in_chunk);
    zs.next_out = probing ? &probe : reinterpret_cast<Bytef*>(out.data() + out_done);
    zs.avail_out = probing ? 1u : uInt(out_chunk);
    const uInt out_given = zs.avail_out;
    rc = inflate(&zs, Z_NO_FLUSH);
    const std::uint64_t consumed = in_chunk - zs.avail_in, produced = out_given - zs.avail_out;
    in_done += consumed;
    if (probing && produced > 0) too_long = true;
    if (!probing) out_done += produced;
    if (too_long || rc != Z_OK || (consumed == 0 && produced == 0)) break;
  }
  inflateEnd(&zs);
  if (too_long || rc != Z_STREAM_END || out_done != size) {
    throw ZipError("record '" + name + "' does not inflate to its declared " +
                   std::to_string(size) + " bytes (corrupt deflate data)");
  }
  return out;
}

}  // namespace

std::uint32_t crc32_of(std::string_view bytes) {
  return std::uint32_t(::crc32_z(0L, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
}

// ---- reader ----------------------------------------------------------------------------------

ZipReader::ZipReader(std::string_view bytes, ReadBudget& budget) : bytes_(bytes), budget_(budget) {
  const Directory d = read_directory_location(bytes_);
  directory_offset_ = d.offset;
  parse_central_directory(d.offset, d.size, d.count);
}

void ZipReader::parse_central_directory(std::uint64_t offset, std::uint64_t size,
                                        std::uint64_t count) {
  budget_.charge(count * kEntryOverhead, "zip directory");
  entries_.reserve(count);
  by_name_.reserve(count);
  Cursor c(bytes_, offset, offset + size, "central directory");
  for (std::uint64_t i = 0; i < count; ++i) {
    if (c.u32() != kCentralSignature) throw ZipError("malformed zip (bad central directory entry)");
    ZipEntry e;
    c.u16();  // version made by
    c.u16();  // version needed
    e.flags = c.u16();
    e.method = c.u16();
    c.u32();  // time, date
    e.crc32 = c.u32();
    const std::uint32_t csize = c.u32(), usize = c.u32();
    const std::uint16_t name_size = c.u16(), extra_size = c.u16(), comment_size = c.u16();
    c.u16();  // disk
    c.u16();  // internal attributes
    c.u32();  // external attributes
    const std::uint32_t local = c.u32();
    const std::string_view name = c.take(name_size);
    const std::string_view extra = c.take(extra_size);
    c.take(comment_size);
    budget_.charge(name.size(), "zip directory");
    e.name = std::string(name);
    e.compressed_size = csize;
    e.uncompressed_size = usize;
    e.local_offset = local;
    apply_zip64_extra(extra, e, usize, csize, local);
    entries_.push_back(std::move(e));
    if (!by_name_.emplace(entries_.back().name, entries_.size() - 1).second) {
      throw ZipError("malformed zip (two records named '" + entries_.back().name + "')");
    }
  }
}

const ZipEntry* ZipReader::find(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &entries_[it->second];
}

ZipRecord ZipReader::read(const ZipEntry& e) const {
  const std::string where = "record '" + e.name + "'";
  if (e.flags & 1) throw ZipError(where + " is encrypted");
  if (e.method != 0 && e.method != 8) {
    throw ZipError(where + " uses compression method " + std::to_string(e.method) +
                   " (only stored and deflate are supported)");
  }
  Cursor local(bytes_, e.local_offset, directory_offset_, "local header");
  if (local.u32() != kLocalSignature)
    throw ZipError("malformed zip (bad local header of " + where + ")");
  local.take(22);  // versions, flags, method, time, date, CRC, sizes: the directory's count
  const std::uint16_t name_size = local.u16(), extra_size = local.u16();
  if (local.take(name_size) != e.name) {
    throw ZipError("malformed zip (" + where + " has another name in its local header)");
  }
  local.take(extra_size);
  const std::string_view data = local.take(e.compressed_size);
  ZipRecord record;
  if (e.method == 0) {
    if (e.compressed_size != e.uncompressed_size) {
      throw ZipError("malformed zip (stored " + where + " has two different sizes)");
    }
    record.bytes = data;
  } else {
    if (e.uncompressed_size / kMaxDeflateRatio > e.compressed_size + 1) {
      throw ZipError(where + " claims to inflate " + std::to_string(e.compressed_size) +
                     " bytes to " + std::to_string(e.uncompressed_size) +
                     ", more than deflate can compress");
    }
    budget_.charge(e.uncompressed_size + sizeof(std::string), "an inflated zip record");
    record.inflated =
        std::make_shared<std::string>(inflate_exactly(data, e.uncompressed_size, e.name));
    record.bytes = *record.inflated;
  }
  const std::uint32_t crc = crc32_of(record.bytes);
  if (crc != e.crc32) {
    throw ZipError(where + " is corrupt: its CRC-32 is " + hex32(crc) + ", the archive says " +
                   hex32(e.crc32));
  }
  return record;
}

}  // namespace ltfit::zip
