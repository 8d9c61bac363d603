#include "ltfit/data/codec_info.h"

#include <opencv2/core/version.hpp>

namespace ltfit {

std::string opencv_version() { return CV_VERSION; }

}  // namespace ltfit
