// The 1000 ImageNet-1k class names in torchvision's label order (embedded in the binary).
#pragma once

#include <string>
#include <vector>

namespace ltfit {

const std::vector<std::string>& imagenet_classes();

}  // namespace ltfit
