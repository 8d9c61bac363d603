// Seeds of the CIFAR target (cifar_target.cpp: first byte even for CIFAR-10, odd for CIFAR-100;
// the class names up to a NUL; then the training batch, whose first half is the test batch):
// valid folders of each format, and the malformed ones the reader refuses (a truncated record, a
// label past the names, names blank or repeated, an empty batch).
#include <string>

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

}  // namespace

std::vector<Seed> cifar_seeds() {
  const std::string ten = records(4, 1, 3);
  const std::string hundred = records(4, 2, 3);
  return {
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
}

}  // namespace ltfit::fuzz
