// Sizes of torchvision's weight files: see weights_size.h.
#include "ltfit/model/weights_size.h"

#include <cmath>

namespace ltfit {

namespace {

struct PublishedSize {
  const char* file;
  double mib;  // torchvision's meta["_file_size"] (torchvision 0.29), MiB to 3 decimals
};

// Every weight file of the arch registry (model/arch_registry.h); a test checks none is missing.
constexpr PublishedSize kPublished[] = {
    {"resnet18-f37072fd.pth", 44.661},
    {"resnet34-b627a593.pth", 83.275},
    {"resnet50-0676ba61.pth", 97.781},
    {"resnet101-63fe2227.pth", 170.511},
    {"resnet152-394f9c45.pth", 230.434},
    {"resnext50_32x4d-1a0047aa.pth", 95.833},
    {"wide_resnet50_2-9ba9bcbe.pth", 263.124},
    {"convnext_tiny-983f1562.pth", 109.119},
    {"convnext_small-0c510722.pth", 191.703},
    {"efficientnet_b0_rwightman-7f5810bc.pth", 20.451},
    {"efficientnet_b1_rwightman-bac287d4.pth", 30.134},
    {"efficientnet_b2_rwightman-c35c1473.pth", 35.174},
    {"efficientnet_b3_rwightman-b3899882.pth", 47.184},
    {"efficientnet_v2_s-dd5fe13b.pth", 82.704},
    {"mobilenet_v3_large-8738ca79.pth", 21.114},
    {"mobilenet_v3_large-5c1a4163.pth", 21.107},
    {"mobilenet_v3_small-047dcff4.pth", 9.829},
    {"regnet_y_800mf-1b27b58c.pth", 24.774},
    {"regnet_y_1_6gf-b11a554e.pth", 43.152},
    {"swin_t-704ceda3.pth", 108.19},
    {"vit_b_16-c867db91.pth", 330.285},
};

const PublishedSize* find_published(const std::string& file_name) {
  for (const PublishedSize& p : kPublished) {
    if (file_name == p.file) return &p;
  }
  return nullptr;
}

}  // namespace

std::int64_t torchvision_weights_max_bytes(const std::string& file_name) {
  const PublishedSize* p = find_published(file_name);
  if (p == nullptr) return kMaxWeightsBytes;
  constexpr double kMiB = 1024.0 * 1024.0;
  constexpr double kHalfRounding = 0.0005;  // the published size is rounded to 0.001 MiB
  return static_cast<std::int64_t>(std::floor((p->mib + kHalfRounding) * kMiB));
}

bool torchvision_weights_size_known(const std::string& file_name) {
  return find_published(file_name) != nullptr;
}

}  // namespace ltfit
