// Images per class in words: see class_counts.h.
#include "ltfit/data/class_counts.h"

#include <cstdint>

#include "ltfit/util/utf8.h"

namespace ltfit {

std::string describe_class_counts(const std::vector<Sample>& samples,
                                  const std::vector<std::string>& classes) {
  std::vector<std::int64_t> counts(classes.size(), 0);
  const auto count = [&counts](std::int64_t label) {
    if (label >= 0 && static_cast<std::size_t>(label) < counts.size())
      ++counts[static_cast<std::size_t>(label)];
  };
  for (const Sample& s : samples) {
    if (s.labels.empty()) {
      count(s.label);
    } else {
      for (std::int64_t label : s.labels) count(label);  // multi-label: every label of the image
    }
  }
  std::string text = std::to_string(samples.size()) + " images (";
  for (std::size_t k = 0; k < classes.size(); ++k) {
    text += (k ? ", " : "") + escape_utf8(classes[k]) + " " + std::to_string(counts[k]);
  }
  return text + ")";
}

}  // namespace ltfit
