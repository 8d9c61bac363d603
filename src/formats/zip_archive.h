// The zip container of `torch.save` files: a bounds-checked reader and an aligned writer.
//
// Private to src/model. The reader works on bytes already in memory (so that a fuzz target can
// call it without a file system): it parses the end-of-central-directory record (zip64 too), the
// central directory and each local header, checks every offset and size against the bytes,
// supports STORED and DEFLATE records, verifies each record's CRC-32 before returning it, and
// charges everything it allocates (its tables, inflated records) to a ReadBudget. A DEFLATE record
// may not claim more than deflate's maximum ratio, nor inflate past its declared size.
// The writer emits STORED records whose data start on a 64-byte boundary (through the padding
// extra field `FB` that PyTorch's writer uses, so torch.load(mmap=True) works), with CRC-32 and
// zip64 fields where sizes or offsets need them. Not thread-safe per instance; no globals.
// Reader in zip_reader.cpp, writer in zip_writer.cpp, the record layouts in zip_format.h.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ltfit/util/read_limits.h"

namespace ltfit::zip {

class ZipError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ZipEntry {
  std::string name;
  std::uint64_t local_offset = 0;  // of the local header
  std::uint64_t compressed_size = 0;
  std::uint64_t uncompressed_size = 0;
  std::uint32_t crc32 = 0;
  std::uint16_t method = 0;  // 0 STORED, 8 DEFLATE
  std::uint16_t flags = 0;
};

// A record's bytes: a view into the archive (STORED) or into `inflated` (DEFLATE).
struct ZipRecord {
  std::string_view bytes;
  std::shared_ptr<std::string> inflated;  // null for STORED records
};

class ZipReader {
 public:
  // Parses the central directory of `bytes`, which must outlive the reader. Throws ZipError for
  // anything malformed, LimitError when its tables would exceed `budget`.
  ZipReader(std::string_view bytes, ReadBudget& budget);
  ZipReader(const ZipReader&) = delete;  // by_name_ views the entries' names
  ZipReader& operator=(const ZipReader&) = delete;

  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(std::string_view name) const;
  // The record's bytes, CRC-32 checked (ZipError naming the record on a mismatch).
  ZipRecord read(const ZipEntry& entry) const;

 private:
  void parse_central_directory(std::uint64_t offset, std::uint64_t size, std::uint64_t count);

  std::string_view bytes_;
  ReadBudget& budget_;
  std::uint64_t directory_offset_ = 0;  // where record data must end
  std::vector<ZipEntry> entries_;
  std::unordered_map<std::string_view, std::size_t> by_name_;
};

// CRC-32 (zip's, zlib's) of `bytes`.
std::uint32_t crc32_of(std::string_view bytes);

// Where a ZipWriter's bytes go. write() throws on failure.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual void write(std::string_view bytes) = 0;
};

class StringSink : public ByteSink {
 public:
  void write(std::string_view bytes) override { out_.append(bytes); }
  std::string& str() { return out_; }

 private:
  std::string out_;
};

struct ZipWriterOptions {
  std::uint64_t alignment = 64;  // record data start on multiples of this (a power of two <= 4096)
  bool force_zip64 = false;      // zip64 fields and end records even when not needed (tests)
};

class ZipWriter {
 public:
  explicit ZipWriter(ByteSink& sink, ZipWriterOptions options = {});
  // Writes a STORED record with its data aligned; returns the data's CRC-32 (as written).
  std::uint32_t add(std::string_view name, std::string_view data);
  // Writes a DEFLATE record (not aligned; for tests of the reader).
  void add_deflated(std::string_view name, std::string_view data);
  // Writes the central directory and the end records. No record may be added afterwards.
  void finish();

 private:
  void add_record(std::string_view name, std::string_view payload, std::uint64_t size,
                  std::uint32_t crc, std::uint16_t method, bool align);
  void put(std::string_view bytes);

  ByteSink& sink_;
  ZipWriterOptions options_;
  std::uint64_t offset_ = 0;
  std::vector<ZipEntry> written_;
  bool finished_ = false;
};

}  // namespace ltfit::zip
