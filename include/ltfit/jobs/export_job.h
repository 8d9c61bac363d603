// `ltfit export`: a checkpoint's weights (load_model_for_eval) as a torch.save state dict that
// Python's torch.load reads and that loads strictly into torchvision's model (linear head) or
// torchvision's body plus fastai's head (docs/export.md), with its description beside it
// (export_meta.h: arch, head, classes, normalisation, eval transform). Not thread-safe.
#pragma once

#include <string>

namespace ltfit {

// Writes the weights of `checkpoint` to `out`, its description to export_meta_path(out), and logs
// what it wrote. ConfigError (exit 2), before anything is read, when either output is the
// checkpoint (check_output_not_input); CheckpointError (exit 4) for a checkpoint that cannot be
// read, RuntimeError (exit 5) for an output that cannot be written.
// `weights` ("auto" | "ema" | "model", --weights): the checkpoint's moving average of the
// weights (train.ema) or its trained weights; auto: the average when it has one.
void run_export_job(const std::string& checkpoint, const std::string& out,
                    const std::string& weights = "auto");

}  // namespace ltfit
