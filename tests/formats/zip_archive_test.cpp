// The zip reader and writer of torch.save archives: round trips (stored, deflate, zip64), 64-byte
// data alignment, CRC-32 checks naming the record, and malformed or hostile archives (truncated
// at every length, flipped bytes, a deflate bomb, zip64 counts that cannot fit) ending in an error
// within the reader's budget, never in a crash or a large allocation.
#include <catch2/catch.hpp>

#include <random>

#include "formats/zip_archive.h"
#include "ltfit/util/read_limits.h"
#include "model/archive_builders.h"

namespace {

using ltfit::LimitError;
using ltfit::ReadBudget;
using ltfit::zip::ZipError;
using ltfit::zip::ZipReader;
using ltfit::zip::ZipWriter;

std::string sample_zip(bool force_zip64) {
  ltfit::zip::StringSink sink;
  ltfit::zip::ZipWriterOptions options;
  options.force_zip64 = force_zip64;
  ZipWriter w(sink, options);
  w.add("archive/data.pkl", "pickle bytes");
  w.add("archive/empty", "");
  w.add("archive/data/0", std::string(1000, '\x07'));
  w.add_deflated("archive/deflated", std::string(100000, 'z') + "tail");
  w.finish();
  return std::move(sink.str());
}

// Reads every record; any error propagates.
void read_all(std::string_view bytes, std::uint64_t budget_bytes = 64 << 20) {
  ReadBudget budget(budget_bytes);
  const ZipReader reader(bytes, budget);
  for (const auto& e : reader.entries()) reader.read(e);
}

}  // namespace

TEST_CASE("zip writer output reads back: stored, deflate, zip64, data on 64-byte boundaries",
          "[zip][model]") {
  for (const bool zip64 : {false, true}) {
    INFO("force_zip64 " << zip64);
    const std::string bytes = sample_zip(zip64);
    CHECK((bytes.find("PK\x06\x06") != std::string::npos) == zip64);  // zip64 end record
    ReadBudget budget(1 << 20);
    const ZipReader reader(bytes, budget);
    REQUIRE(reader.entries().size() == 4);
    CHECK(reader.entries()[0].name == "archive/data.pkl");
    CHECK(reader.read(*reader.find("archive/data.pkl")).bytes == "pickle bytes");
    CHECK(reader.read(*reader.find("archive/empty")).bytes.empty());
    const auto data = reader.read(*reader.find("archive/data/0"));
    CHECK(data.bytes == std::string(1000, '\x07'));
    CHECK(data.inflated == nullptr);  // a view of the archive, no copy
    CHECK((data.bytes.data() - bytes.data()) % 64 == 0);
    CHECK((reader.read(reader.entries()[0]).bytes.data() - bytes.data()) % 64 == 0);
    const auto deflated = reader.read(*reader.find("archive/deflated"));
    CHECK(deflated.bytes == std::string(100000, 'z') + "tail");
    CHECK(reader.find("archive/missing") == nullptr);
  }
}

TEST_CASE("a record whose bytes do not match its CRC-32 is refused by name", "[zip][model]") {
  std::string bytes = sample_zip(false);
  const std::size_t at = bytes.find(std::string(1000, '\x07'));
  REQUIRE(at != std::string::npos);
  bytes[at + 500] = '\x08';
  ReadBudget budget(1 << 20);
  const ZipReader reader(bytes, budget);
  CHECK_NOTHROW(reader.read(*reader.find("archive/data.pkl")));
  CHECK_THROWS_WITH(reader.read(*reader.find("archive/data/0")),
                    Catch::Contains("'archive/data/0'") && Catch::Contains("CRC-32"));
}

TEST_CASE("truncated or corrupted zips throw ZipError or LimitError, never crash", "[zip][model]") {
  for (const bool zip64 : {false, true}) {
    const std::string valid = sample_zip(zip64);
    int errors = 0;
    for (std::size_t n = 0; n < valid.size(); ++n) {  // every truncation
      try {
        read_all(std::string_view(valid).substr(0, n));
      } catch (const ZipError&) {
        ++errors;
      }
    }
    CHECK(errors == int(valid.size()));
    std::mt19937 rng(7);
    for (int trial = 0; trial < 3000; ++trial) {  // flipped bytes anywhere
      std::string bytes = valid;
      for (int k = 0; k < 1 + trial % 3; ++k) {
        bytes[std::uniform_int_distribution<std::size_t>(0, bytes.size() - 1)(rng)] =
            char(std::uniform_int_distribution<int>(0, 255)(rng));
      }
      try {
        read_all(bytes, 1 << 20);
      } catch (const ZipError&) {
      } catch (const LimitError&) {
      }  // anything else escapes and fails the test
    }
  }
}

TEST_CASE("a deflate bomb stops at the budget before inflating", "[zip][model]") {
  ltfit::zip::StringSink sink;
  ZipWriter w(sink);
  w.add_deflated("archive/data.pkl", std::string(50 << 20, 'N'));  // 50 MiB -> ~50 KB
  w.finish();
  const std::string& bytes = sink.str();
  CHECK(bytes.size() < 100000);
  ReadBudget budget(8 << 20);
  const ZipReader reader(bytes, budget);
  CHECK_THROWS_AS(reader.read(reader.entries()[0]), LimitError);
  CHECK(budget.used() < 4096);  // nothing inflated

  // A record claiming more than deflate can compress to is malformed, whatever the budget.
  std::string lying = bytes;
  const std::size_t central = lying.find("PK\x01\x02");
  REQUIRE(central != std::string::npos);
  const std::string big = ltfit::testing::le_bytes(0xfffffff0u, 4);
  lying.replace(central + 24, 4, big);  // uncompressed size
  ReadBudget large(std::uint64_t(1) << 40);
  const ZipReader lied(lying, large);
  CHECK_THROWS_WITH(lied.read(lied.entries()[0]), Catch::Contains("more than deflate"));
}

TEST_CASE("zip64 end records claiming impossible counts or offsets are refused", "[zip][model]") {
  const std::string valid = sample_zip(true);
  const std::size_t end64 = valid.rfind("PK\x06\x06");
  REQUIRE(end64 != std::string::npos);
  const auto patched = [&](std::size_t field, std::uint64_t value) {
    std::string bytes = valid;
    bytes.replace(end64 + field, 8, ltfit::testing::le_bytes(value, 8));
    return bytes;
  };
  // 2^60 entries (on disk and in total): they cannot fit in the directory; nothing is reserved.
  std::string many = patched(24, std::uint64_t(1) << 60);
  many.replace(end64 + 32, 8, ltfit::testing::le_bytes(std::uint64_t(1) << 60, 8));
  CHECK_THROWS_WITH(read_all(many), Catch::Contains("cannot fit"));
  CHECK_THROWS_AS(read_all(patched(40, std::uint64_t(1) << 62)), ZipError);  // directory size
  CHECK_THROWS_AS(read_all(patched(48, std::uint64_t(1) << 62)), ZipError);  // directory offset
}
