// Images per class of a sample list, in words for the log: "600 images (cat 300, dog 200,
// fox 100)", so that an imbalanced set shows at once. Pure, thread-safe.
#pragma once

#include <string>
#include <vector>

#include "ltfit/data/dataset_index.h"

namespace ltfit {

// "<N> images (<class> <count>, ...)" over `samples`, classes in label order (`classes` names
// them; a class without images shows 0).
std::string describe_class_counts(const std::vector<Sample>& samples,
                                  const std::vector<std::string>& classes);

}  // namespace ltfit
