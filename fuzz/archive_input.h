// The input format of the pickle and checkpoint fuzz targets, and its encoder for the seeds.
//
// Mutating a torch.save zip byte by byte mostly breaks its CRC-32s, so the fuzzer would never
// get past the zip reader into the pickle. These targets therefore take the archive's contents,
// not its container: the pickle (data.pkl) and the storage records, which the target packs into
// a valid torch.save zip (ZipWriter) before reading it with ltfit's reader. The zip layer itself
// is fuzzed on raw bytes by zip_fuzzer.cpp.
//
//   input   := u32 pickle_size, pickle bytes, record*           (little-endian; sizes clamped
//   record  := u32 record_size, u16 content_size, content bytes   to what is left of the input)
//
// Record i is `archive/data/<i>`: its content, zero-padded (or cut) to record_size, so a seed
// can describe a 45 MB model's storages in a few hundred bytes. At most kMaxRecords records and
// a target-chosen number of bytes in all (larger ones are cut), so one input never builds more
// than that: mutated sizes are mostly huge, and every byte built is copied and CRC-checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ltfit::fuzz {

inline constexpr std::size_t kMaxRecords = 1024;
inline constexpr std::uint64_t kSmallRecordBytes = 1ull << 20;   // pickles, optimizer snapshots
inline constexpr std::uint64_t kModelRecordBytes = 64ull << 20;  // a resnet18 checkpoint
// Records up to this size keep their content in a seed; larger ones are described by size only.
inline constexpr std::size_t kMaxSeedContent = 8192;

struct ArchiveParts {
  std::string pickle;
  std::vector<std::string> records;  // contents of archive/data/0, archive/data/1, ...
};

// Decodes a fuzz input (never throws; whatever the bytes, the records hold at most
// `max_record_bytes` in all).
ArchiveParts decode_archive_input(std::string_view input, std::uint64_t max_record_bytes);

// The torch.save zip of `parts` (data.pkl, byteorder, data/<i>, version).
std::string build_archive(const ArchiveParts& parts);

// Encodes a torch.save archive's contents as a fuzz input: data.pkl and its `data/<i>` records
// (those up to kMaxSeedContent bytes with their content, larger ones by size, as zeros). Throws
// std::runtime_error when `archive` is not a readable zip with a data.pkl.
std::string encode_archive_input(std::string_view archive);

}  // namespace ltfit::fuzz
