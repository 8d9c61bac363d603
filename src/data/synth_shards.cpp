// The synthetic set as tar shards (synth_draw.h): what WebDataset's ShardWriter writes, one
// ustar file per kSynthShardSamples samples, each sample a JPEG and its class number. Thread-safe:
// no shared state.
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "data/synth_draw.h"
#include "data/tar_reader.h"
#include "ltfit/util/atomic_file.h"
#include "ltfit/util/error.h"

namespace ltfit {
namespace {

namespace fs = std::filesystem;

std::string six_digits(std::size_t n) {
  char text[32];
  std::snprintf(text, sizeof text, "%06zu", n);
  return text;
}

void write_split(const fs::path& dir, const std::string& split,
                 const std::vector<ShardSynthImage>& images) {
  for (std::size_t shard = 0; shard * kSynthShardSamples < images.size(); ++shard) {
    std::vector<std::pair<std::string, std::string>> members;
    const std::size_t end = std::min(images.size(), (shard + 1) * kSynthShardSamples);
    for (std::size_t i = shard * kSynthShardSamples; i < end; ++i) {
      members.emplace_back(six_digits(i) + ".jpg", images[i].jpeg);
      members.emplace_back(six_digits(i) + ".cls", std::to_string(images[i].label));
    }
    write_file_atomic((dir / (split + "-" + six_digits(shard) + ".tar")).string(),
                      layouts::ustar_archive(members));
  }
}

}  // namespace

void write_shards(const SynthOptions& options, const std::array<const char*, 2>& classes,
                  const std::vector<ShardSynthImage>& train,
                  const std::vector<ShardSynthImage>& valid) {
  const fs::path dir(options.out_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw DataError("cannot create directory '" + dir.string() + "'",
                    "choose another --out directory, or check its permissions");
  }
  write_split(dir, "train", train);
  write_split(dir, "valid", valid);
  write_text_atomic((dir / "classes.txt").string(),
                    std::string(classes[0]) + "\n" + classes[1] + "\n");
}

}  // namespace ltfit
