// Images per class in words: see class_counts.h.
#include "ltfit/data/class_counts.h"

#include <cstdint>

#include "ltfit/util/utf8.h"

namespace ltfit {

std::string describe_class_counts(const std::vector<Sample>& samples,
                                  const std::vector<std::string>& classes) {
  std::vector<std::int64_t> counts(classes.size(), 0);
  for (const Sample& s : samples) {
    if (s.label >= 0 && static_cast<std::size_t>(s.label) < counts.size())
      ++counts[static_cast<std::size_t>(s.label)];
  }
  std::string text = std::to_string(samples.size()) + " images (";
  for (std::size_t k = 0; k < classes.size(); ++k) {
    text += (k ? ", " : "") + escape_utf8(classes[k]) + " " + std::to_string(counts[k]);
  }
  return text + ")";
}

}  // namespace ltfit
