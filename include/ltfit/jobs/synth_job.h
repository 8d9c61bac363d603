// `ltfit synth`: write a synthetic image set (data/synth.h) and log what was written
// and how long it took. Not thread-safe.
#pragma once

#include "ltfit/data/synth.h"

namespace ltfit {

// write_synthetic_dataset(options), timed and logged.
SynthResult run_synth_job(const SynthOptions& options);

}  // namespace ltfit
