// Fuzz target: the shards layout's tar reader and indexer (src/data/tar_reader.cpp,
// layout_shards.cpp) on one training shard: the input is written as train-000000.tar (no
// classes.txt, no validation shard: the samples are split by valid_pct).
//
// A malformed shard or label must end in DataError and nothing else. Findings, besides crashes,
// sanitizer reports and memory beyond what the members' count explains: an accepted index whose
// classes are not sorted and unique, a label outside them, or a sample whose member range is not
// inside the shard (its first and last byte are read back through the range).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "data/layouts.h"
#include "data/regular_file.h"
#include "fuzz_checks.h"
#include "ltfit/util/error.h"
#include "targets.h"

namespace ltfit::fuzz {

namespace {

namespace fs = std::filesystem;

const fs::path& shard_folder() {
  static const fs::path folder = [] {
    std::string pattern = (fs::temp_directory_path() / "ltfit-fuzz-shards-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) invariant_failed("cannot create a temp folder");
    return fs::path(pattern);
  }();
  return folder;
}

void check_samples(const std::vector<Sample>& samples, const DatasetIndex& index,
                   std::uint64_t shard_bytes) {
  for (const Sample& s : samples) {
    if (s.label < 0 || static_cast<std::size_t>(s.label) >= index.classes.size()) {
      invariant_failed("a label outside the classes");
    }
    const FileRange& m = s.member;
    if (!m || m.offset > shard_bytes || m.size > shard_bytes - m.offset) {
      invariant_failed("a member range outside its shard");
    }
  }
}

}  // namespace

Outcome run_shards(std::string_view input) {
  const fs::path shard = shard_folder() / "train-000000.tar";
  {
    std::ofstream out(shard, std::ios::binary | std::ios::trunc);
    out.write(input.data(), static_cast<std::streamsize>(input.size()));
    if (!out) invariant_failed("cannot write a fuzz input file");
  }
  DataConfig data;
  data.root = shard_folder().string();
  DatasetIndex index;
  try {
    index = layouts::index_shards_layout(data, 0, false);
  } catch (const DataError& e) {
    note_refusal(e.what());
    return Outcome::kRefused;
  }
  if (!std::is_sorted(index.classes.begin(), index.classes.end()) ||
      std::adjacent_find(index.classes.begin(), index.classes.end()) != index.classes.end()) {
    invariant_failed("classes not sorted and unique");
  }
  check_samples(index.train, index, input.size());
  check_samples(index.valid, index, input.size());
  return Outcome::kAccepted;
}

}  // namespace ltfit::fuzz
