// Seeds of the shards target (shards_target.cpp: the input is one training shard): ustar shards
// as ltfit synth and WebDataset write them, a GNU long name and a pax path, and the malformed
// ones the reader refuses (a bad checksum, a member past the end, a label that is no name).
#include <string>
#include <utility>
#include <vector>

#include "data/tar_reader.h"
#include "seeds.h"

namespace ltfit::fuzz {
namespace {

using Members = std::vector<std::pair<std::string, std::string>>;

// A tiny "image" (the index never decodes it) and its label, `count` times.
Members samples(int count) {
  Members out;
  for (int i = 0; i < count; ++i) {
    const std::string key = "s" + std::to_string(i);
    out.emplace_back(key + ".jpg", std::string(40 + i, static_cast<char>(0xd8)));
    out.emplace_back(key + (i % 3 == 2 ? ".json" : ".cls"),
                     i % 3 == 2 ? R"({"label": "bird"})" : (i % 2 ? "dog" : "cat"));
  }
  return out;
}

// `tar` with its first header's type flag and name replaced, the checksum recomputed.
std::string retyped(std::string tar, char type, const std::string& name) {
  std::fill(tar.begin(), tar.begin() + 100, '\0');
  tar.replace(0, name.size(), name);
  tar[156] = type;
  std::fill(tar.begin() + 148, tar.begin() + 156, ' ');
  unsigned sum = 0;
  for (int i = 0; i < 512; ++i) sum += static_cast<unsigned char>(tar[i]);
  char text[8];
  std::snprintf(text, sizeof text, "%06o", sum);
  tar.replace(148, 6, text, 6);
  tar[154] = '\0';
  return tar;
}

}  // namespace

std::vector<Seed> shards_seeds() {
  using layouts::ustar_archive;
  const std::string plain = ustar_archive(samples(6));
  // A GNU long name ('L') before a member: the member takes it.
  const std::string long_name(150, 'n');
  std::string gnu = retyped(ustar_archive({{"x", long_name + ".jpg"}}), 'L', "././@LongLink");
  gnu.resize(gnu.size() - 1024);  // drop its end-of-archive blocks
  gnu += ustar_archive(samples(3));
  // A pax header ('x') naming the next member.
  // "LEN path=...\n", LEN counting itself: 29 bytes.
  const std::string pax_record = "29 path=dir/renamed_0001.jpg\n";
  std::string pax = retyped(ustar_archive({{"x", pax_record}}), 'x', "PaxHeader");
  pax.resize(pax.size() - 1024);  // drop its end-of-archive blocks
  pax += ustar_archive(samples(3));
  std::string bad_sum = plain;
  bad_sum[5] ^= 1;
  return {
      {"shard", plain},
      {"gnu-long-name", gnu},
      {"pax-path", pax},
      {"bad-checksum", bad_sum, Expect::kRefused},
      {"past-the-end", plain.substr(0, 530), Expect::kRefused},
      {"no-label", ustar_archive({{"a.jpg", "x"}}), Expect::kRefused},
      {"empty", "", Expect::kRefused},
  };
}

}  // namespace ltfit::fuzz
