// Small formatting helpers shared by reports and logs. Pure functions, thread-safe.
#pragma once

#include <string>

namespace ltfit {

// 83.4 -> "01:23" (fastai's mm:ss); at or above an hour "1:02:03".
std::string format_mm_ss(double seconds);

}  // namespace ltfit
