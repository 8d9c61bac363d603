// The byte bound on each registered torchvision weight file (a download stops there).
#include "ltfit/model/weights_size.h"

#include <catch2/catch.hpp>

#include "ltfit/model/arch_registry.h"

TEST_CASE("every registered weight file has torchvision's published size as its bound",
          "[pretrained]") {
  for (const ltfit::ArchInfo& a : ltfit::arch_registry()) {
    INFO(a.name << ": " << a.weights_file);
    CHECK(ltfit::torchvision_weights_size_known(a.weights_file));
    CHECK(ltfit::torchvision_weights_max_bytes(a.weights_file) < ltfit::kMaxWeightsBytes);
  }
  // The exact size of resnet18-f37072fd.pth is 46830571 bytes: the bound admits it and at most
  // the published rounding (0.0005 MiB = 524 bytes) more.
  const std::int64_t resnet18 = ltfit::torchvision_weights_max_bytes("resnet18-f37072fd.pth");
  CHECK(resnet18 >= 46830571);
  CHECK(resnet18 <= 46830571 + 524);
  CHECK(ltfit::torchvision_weights_max_bytes("mine-0123abcd.pth") == ltfit::kMaxWeightsBytes);
  CHECK_FALSE(ltfit::torchvision_weights_size_known("mine-0123abcd.pth"));
}
