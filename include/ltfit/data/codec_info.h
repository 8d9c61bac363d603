// Which image codec library ltfit was built against, for environment reports.
//
// Only src/data may include OpenCV, so the version string is exposed here for the rest of the
// library (util/envinfo). Thread-safe: returns a constant.
#pragma once

#include <string>

namespace ltfit {

// OpenCV's version as compiled in, e.g. "4.6.0".
std::string opencv_version();

}  // namespace ltfit
