// The phases' names, as timing.json and the phase table write them (timing.h). Apart from
// timing.cpp so that the checkpoint reader (which stores phase totals by name) needs no profiler:
// the fuzz build compiles the reader alone. Thread-safe.
#include <array>

#include "ltfit/run/timing.h"

namespace ltfit {

namespace {

constexpr std::array<const char*, kPhaseCount> kPhaseNames = {
    "data_wait", "host_to_device", "forward",  "backward", "optimizer", "validation",
    "tta",       "checkpoint",     "grad_sync"};

}  // namespace

const char* phase_name(Phase phase) { return kPhaseNames[static_cast<int>(phase)]; }

}  // namespace ltfit
