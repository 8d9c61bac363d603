// The config in a few lines, for the terminal: a run's train.log and config.yaml hold every key.
// Pure function, thread-safe.
#pragma once

#include <string>
#include <vector>

#include "ltfit/config/config.h"

namespace ltfit {

// Model, data, recipe and schedule (with precision, device and seed), evaluation: one line each.
std::vector<std::string> summarize_config(const Config& config);

}  // namespace ltfit
