// The zip writer (zip_archive.h): STORED records whose data start on an aligned offset (through
// PyTorch's `FB` padding extra field), DEFLATE records for tests of the reader, zip64 fields where
// sizes or offsets need them, fixed timestamps so that equal contents give equal files.
// Layouts: zip_format.h.
#include "formats/zip_archive.h"

#include <zlib.h>

#include "formats/zip_format.h"

namespace ltfit::zip {

namespace {

void append_le(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
}

}  // namespace

ZipWriter::ZipWriter(ByteSink& sink, ZipWriterOptions options) : sink_(sink), options_(options) {
  if (options_.alignment == 0 || options_.alignment > 4096 ||
      (options_.alignment & (options_.alignment - 1)) != 0) {
    throw ZipError("zip alignment must be a power of two up to 4096");
  }
}

void ZipWriter::put(std::string_view bytes) {
  sink_.write(bytes);
  offset_ += bytes.size();
}

std::uint32_t ZipWriter::add(std::string_view name, std::string_view data) {
  const std::uint32_t crc = crc32_of(data);
  add_record(name, data, data.size(), crc, 0, /*align=*/true);
  return crc;
}

void ZipWriter::add_deflated(std::string_view name, std::string_view data) {
  z_stream zs{};
  if (deflateInit2(&zs, 9, Z_DEFLATED, -MAX_WBITS, 9, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw ZipError("cannot start zlib");
  }
  std::string out(deflateBound(&zs, uLong(data.size())), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = uInt(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = uInt(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw ZipError("zlib could not deflate '" + std::string(name) + "'");
  add_record(name, out, data.size(), crc32_of(data), 8, /*align=*/false);
}

void ZipWriter::add_record(std::string_view name, std::string_view payload, std::uint64_t size,
                           std::uint32_t crc, std::uint16_t method, bool align) {
  if (finished_) throw ZipError("zip record added after the central directory");
  if (name.size() > 0xffff) throw ZipError("zip record name too long");
  ZipEntry e;
  e.name = std::string(name);
  e.local_offset = offset_;
  e.compressed_size = payload.size();
  e.uncompressed_size = size;
  e.crc32 = crc;
  e.method = method;
  e.flags = 0x0800;  // names are UTF-8
  const bool zip64 = options_.force_zip64 || size >= k32 || payload.size() >= k32;
  std::string extra;
  if (zip64) {
    append_le(extra, kZip64ExtraId, 2);
    append_le(extra, 16, 2);
    append_le(extra, size, 8);
    append_le(extra, payload.size(), 8);
  }
  if (align) {  // pad so that the data start on a multiple of the alignment
    const std::uint64_t data_start = offset_ + kLocalHeaderSize + name.size() + extra.size() + 4;
    const std::uint64_t pad =
        (options_.alignment - data_start % options_.alignment) % options_.alignment;
    append_le(extra, kPaddingExtraId, 2);
    append_le(extra, pad, 2);
    extra.append(pad, 'Z');
  }
  std::string header;
  append_le(header, kLocalSignature, 4);
  append_le(header, zip64 ? 45 : 20, 2);  // version needed
  append_le(header, e.flags, 2);
  append_le(header, method, 2);
  append_le(header, 0, 2);     // time 00:00:00
  append_le(header, 0x21, 2);  // date 1980-01-01: fixed, so that equal states give equal files
  append_le(header, crc, 4);
  append_le(header, zip64 ? k32 : payload.size(), 4);
  append_le(header, zip64 ? k32 : size, 4);
  append_le(header, name.size(), 2);
  append_le(header, extra.size(), 2);
  header.append(name);
  header.append(extra);
  put(header);
  put(payload);
  written_.push_back(std::move(e));
}

void ZipWriter::finish() {
  if (finished_) return;
  finished_ = true;
  const std::uint64_t directory_offset = offset_;
  for (const ZipEntry& e : written_) {
    const bool big_size =
        options_.force_zip64 || e.uncompressed_size >= k32 || e.compressed_size >= k32;
    const bool big_offset = options_.force_zip64 || e.local_offset >= k32;
    std::string extra;
    if (big_size || big_offset) {
      append_le(extra, kZip64ExtraId, 2);
      append_le(extra, (big_size ? 16 : 0) + (big_offset ? 8 : 0), 2);
      if (big_size) {
        append_le(extra, e.uncompressed_size, 8);
        append_le(extra, e.compressed_size, 8);
      }
      if (big_offset) append_le(extra, e.local_offset, 8);
    }
    std::string h;
    append_le(h, kCentralSignature, 4);
    append_le(h, 0x0300 | 45, 2);  // made by: Unix, zip 4.5
    append_le(h, (big_size || big_offset) ? 45 : 20, 2);
    append_le(h, e.flags, 2);
    append_le(h, e.method, 2);
    append_le(h, 0, 2);
    append_le(h, 0x21, 2);
    append_le(h, e.crc32, 4);
    append_le(h, big_size ? k32 : e.compressed_size, 4);
    append_le(h, big_size ? k32 : e.uncompressed_size, 4);
    append_le(h, e.name.size(), 2);
    append_le(h, extra.size(), 2);
    append_le(h, 0, 2);                             // comment
    append_le(h, 0, 2);                             // disk
    append_le(h, 0, 2);                             // internal attributes
    append_le(h, std::uint64_t(0100644) << 16, 4);  // a regular file, rw-r--r--
    append_le(h, big_offset ? k32 : e.local_offset, 4);
    h.append(e.name);
    h.append(extra);
    put(h);
  }
  const std::uint64_t directory_size = offset_ - directory_offset;
  const std::uint64_t count = written_.size();
  const bool zip64 =
      options_.force_zip64 || count >= k16 || directory_size >= k32 || directory_offset >= k32;
  std::string end;
  if (zip64) {
    const std::uint64_t zip64_end = offset_;
    append_le(end, kZip64EndSignature, 4);
    append_le(end, kZip64EndSize - 12, 8);
    append_le(end, 0x0300 | 45, 2);
    append_le(end, 45, 2);
    append_le(end, 0, 4);
    append_le(end, 0, 4);
    append_le(end, count, 8);
    append_le(end, count, 8);
    append_le(end, directory_size, 8);
    append_le(end, directory_offset, 8);
    append_le(end, kZip64LocatorSignature, 4);
    append_le(end, 0, 4);
    append_le(end, zip64_end, 8);
    append_le(end, 1, 4);
  }
  append_le(end, kEndSignature, 4);
  append_le(end, 0, 2);
  append_le(end, 0, 2);
  append_le(end, zip64 ? k16 : count, 2);
  append_le(end, zip64 ? k16 : count, 2);
  append_le(end, zip64 ? k32 : directory_size, 4);
  append_le(end, zip64 ? k32 : directory_offset, 4);
  append_le(end, 0, 2);
  put(end);
}

}  // namespace ltfit::zip
