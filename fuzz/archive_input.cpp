#include "archive_input.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "formats/zip_archive.h"
#include "ltfit/util/read_limits.h"

namespace ltfit::fuzz {

namespace {

// Reads little-endian integers and byte runs off the front of the input, clamping at its end.
class Cursor {
 public:
  explicit Cursor(std::string_view in) : in_(in) {}
  bool done() const { return in_.empty(); }
  std::uint64_t uint(std::size_t bytes) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < bytes && !in_.empty(); ++i) {
      v |= std::uint64_t(static_cast<unsigned char>(in_[0])) << (8 * i);
      in_.remove_prefix(1);
    }
    return v;
  }
  std::string_view take(std::uint64_t n) {
    const std::string_view out = in_.substr(0, std::size_t(std::min<std::uint64_t>(n, in_.size())));
    in_.remove_prefix(out.size());
    return out;
  }

 private:
  std::string_view in_;
};

void put_uint(std::string& out, std::uint64_t v, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
}

}  // namespace

ArchiveParts decode_archive_input(std::string_view input, std::uint64_t max_record_bytes) {
  Cursor in(input);
  ArchiveParts parts;
  parts.pickle = std::string(in.take(in.uint(4)));
  std::uint64_t total = 0;
  while (!in.done() && parts.records.size() < kMaxRecords) {
    std::uint64_t size = in.uint(4);
    const std::string_view content = in.take(in.uint(2));
    size = std::min<std::uint64_t>(std::max<std::uint64_t>(size, content.size()),
                                   max_record_bytes - total);
    total += size;
    std::string record(std::size_t(size), '\0');
    std::memcpy(record.data(), content.data(),
                std::min<std::size_t>(content.size(), record.size()));
    parts.records.push_back(std::move(record));
  }
  return parts;
}

std::string build_archive(const ArchiveParts& parts) {
  zip::StringSink sink;
  zip::ZipWriter writer(sink);
  writer.add("archive/data.pkl", parts.pickle);
  writer.add("archive/byteorder", "little");
  for (std::size_t i = 0; i < parts.records.size(); ++i) {
    writer.add("archive/data/" + std::to_string(i), parts.records[i]);
  }
  writer.add("archive/version", "3\n");
  writer.finish();
  return std::move(sink.str());
}

std::string encode_archive_input(std::string_view archive) {
  ReadBudget budget(default_read_limits(archive.size()).max_bytes);
  const zip::ZipReader zip(archive, budget);
  if (zip.entries().empty()) throw std::runtime_error("an empty zip");
  const std::string& first = zip.entries().front().name;
  const std::string prefix = first.substr(0, first.find('/') + 1);
  const zip::ZipEntry* pkl = zip.find(prefix + "data.pkl");
  if (pkl == nullptr) throw std::runtime_error("no data.pkl record");
  const zip::ZipRecord pickle = zip.read(*pkl);  // keeps an inflated record alive
  std::string out;
  put_uint(out, pickle.bytes.size(), 4);
  out.append(pickle.bytes);
  // Storage keys are 0, 1, 2, ... in files written by torch.save and by ltfit.
  std::size_t last = 0;
  bool any = false;
  for (const zip::ZipEntry& e : zip.entries()) {
    const std::string data = prefix + "data/";
    if (e.name.rfind(data, 0) != 0) continue;
    const std::string key = e.name.substr(data.size());
    if (key.empty() || key.find_first_not_of("0123456789") != std::string::npos) continue;
    last = std::max<std::size_t>(last, std::stoul(key));
    any = true;
  }
  for (std::size_t i = 0; any && i <= last; ++i) {
    const zip::ZipEntry* e = zip.find(prefix + "data/" + std::to_string(i));
    const zip::ZipRecord record = e ? zip.read(*e) : zip::ZipRecord{};
    const std::string_view bytes = record.bytes;
    const std::string_view content = bytes.size() <= kMaxSeedContent ? bytes : std::string_view();
    put_uint(out, bytes.size(), 4);
    put_uint(out, content.size(), 2);
    out.append(content);
  }
  return out;
}

}  // namespace ltfit::fuzz
