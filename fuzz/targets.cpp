#include <torch/torch.h>
#include <opencv2/core.hpp>

#include "targets.h"

namespace ltfit::fuzz {

void init_targets() {
  // One thread each: libFuzzer runs one input at a time, and pools only add noise and memory.
  torch::set_num_threads(1);
  cv::setNumThreads(0);
}

}  // namespace ltfit::fuzz
