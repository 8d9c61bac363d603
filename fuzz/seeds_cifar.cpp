// Seeds of the CIFAR target (cifar_target.cpp: first byte even for CIFAR-10, odd for CIFAR-100;
// the class names up to a NUL; then the training batch, whose first half is the test batch):
// valid folders of each format, and the malformed ones the reader refuses (a truncated record, a
// label past the names, names blank or repeated, an empty batch). The Python version's seeds
// (first byte | 2: a 4-byte meta length, the meta pickle, the batch pickle) are pickles as Python 2
// wrote CIFAR's, and malformed ones: truncated, a refused global, labels past the names.
#include <string>

#include "data/cifar_records.h"
#include "seeds.h"

namespace ltfit::fuzz {
namespace {

// `count` records of `label_bytes` labels cycling below `classes`, pixels from the record index.
std::string records(int count, int label_bytes, int classes) {
  std::string out;
  for (int r = 0; r < count; ++r) {
    for (int l = 0; l < label_bytes; ++l) out += static_cast<char>(r % classes);
    for (int p = 0; p < 3072; ++p) out += static_cast<char>((p + r * 7) % 256);
  }
  return out;
}

std::string folder(char format, const std::string& names, const std::string& batch) {
  return std::string(1, format) + names + std::string(1, '\0') + batch;
}

// A Python-version folder: `flags` (2 or 3), the meta and the batch pickles.
std::string python_folder(char flags, const std::string& meta, const std::string& batch) {
  std::string out(1, flags);
  for (int i = 0; i < 4; ++i) out += static_cast<char>((meta.size() >> (8 * i)) & 0xff);
  return out + meta + batch;
}

std::vector<Seed> python_seeds() {
  using layouts::cifar::python_batch_pickle;
  using layouts::cifar::python_meta_pickle;
  const std::string planes = records(3, 0, 1);
  const std::string batch = python_batch_pickle({0, 1, 2}, planes, {"a.png", "b.png", "c.png"},
                                                false, "training batch 1 of 1");
  const std::string batch100 = python_batch_pickle({0, 1, 2}, planes, {"a.png", "b.png", "c.png"},
                                                   true, "training batch 1 of 1");
  const std::string meta = python_meta_pickle({"cat", "dog", "bird"}, {}, false);
  const std::string meta100 = python_meta_pickle({"apple", "bee", "cloud"}, {"x", "y"}, true);
  const std::string evil = std::string("\x80\x02") + "cos\nsystem\n" + "U\x01x\x85R.";
  return {
      {"py-cifar10", python_folder('\x02', meta, batch)},
      {"py-cifar100", python_folder('\x03', meta100, batch100)},
      {"py-truncated", python_folder('\x02', meta, batch.substr(0, batch.size() - 40)),
       Expect::kRefused},
      {"py-label-past-names",
       python_folder('\x02', python_meta_pickle({"a", "b"}, {}, false), batch), Expect::kRefused},
      {"py-refused-global", python_folder('\x02', meta, evil), Expect::kRefused},
  };
}

}  // namespace

std::vector<Seed> cifar_seeds() {
  std::vector<Seed> seeds = python_seeds();
  const std::string ten = records(4, 1, 3);
  const std::string hundred = records(4, 2, 3);
  std::vector<Seed> binary = {
      {"cifar10", folder('\x00', "cat\ndog\nbird\n", ten)},
      {"cifar100", folder('\x01', "apple\nbee\ncloud\n", hundred)},
      {"crlf-names", folder('\x00', "cat\r\ndog\r\nbird\r\n\r\n", ten)},
      {"truncated", folder('\x00', "cat\ndog\nbird\n", ten.substr(0, ten.size() - 5)),
       Expect::kRefused},
      {"label-past-names", folder('\x00', "cat\ndog\n", ten), Expect::kRefused},
      {"repeated-names", folder('\x00', "cat\ncat\nbird\n", ten), Expect::kRefused},
      {"blank-name", folder('\x00', "cat\n\nbird\n", ten), Expect::kRefused},
      {"one-name", folder('\x00', "cat\n", ten), Expect::kRefused},
      {"empty-batch", folder('\x00', "cat\ndog\n", ""), Expect::kRefused},
      {"no-names", std::string(1, '\x00'), Expect::kRefused},
  };
  seeds.insert(seeds.end(), binary.begin(), binary.end());
  return seeds;
}

}  // namespace ltfit::fuzz
