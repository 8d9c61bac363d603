// Helpers of the dataset index tests (dataset_index_test.cpp, layouts_test.cpp): a DataConfig
// over a temporary root, placeholder files the index lists by name, the paths of samples, and
// the DataError message of a call.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "ltfit/config/config.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace ltfit::testing {

inline DataConfig index_data_config(const TempDir& dir, const std::string& layout = "auto",
                                    int valid_count = 0) {
  DataConfig data;
  data.root = dir.str();
  data.layout = parse_data_layout(layout);
  data.valid_count = valid_count;
  return data;
}

// A file the index lists by its name (its bytes are never decoded).
inline void touch_index_file(const std::filesystem::path& path) {
  write_file(path, "not decoded by the index");
}

inline std::vector<std::string> sample_paths(const std::vector<Sample>& samples) {
  std::vector<std::string> out;
  for (const auto& s : samples) out.push_back(s.path);
  return out;
}

// The message of the DataError `f` throws, or "(no DataError)".
inline std::string data_error_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const DataError& e) {
    return e.what();
  }
  return "(no DataError)";
}

}  // namespace ltfit::testing
