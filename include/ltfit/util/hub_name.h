// Model names on the Hugging Face hub as ltfit accepts them after "timm/": one path segment that
// cannot leave the folder it names (config's model.pretrained and model's hub cache share it).
#pragma once

#include <string_view>

namespace ltfit {

// Letters, digits, '.', '_' and '-', 1 to 96 characters, not starting with '.'.
inline bool valid_hub_model_name(std::string_view name) {
  return !name.empty() && name.size() <= 96 && name.front() != '.' &&
         name.find_first_not_of(
             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
             std::string_view::npos;
}

}  // namespace ltfit
