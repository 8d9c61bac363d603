// `ltfit export`: a checkpoint's weights (load_model_for_eval) as a torch.save state dict that
// Python's torch.load and torchvision's model (for a linear head) read. Not thread-safe.
#pragma once

#include <string>

namespace ltfit {

// Writes the weights of `checkpoint` to `out` and logs what it wrote. CheckpointError (exit 4)
// for a checkpoint that cannot be read, RuntimeError (exit 5) for an output that cannot be
// written.
void run_export_job(const std::string& checkpoint, const std::string& out);

}  // namespace ltfit
