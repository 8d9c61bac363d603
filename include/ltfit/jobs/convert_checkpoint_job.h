// `ltfit convert-checkpoint --trust-code OLD NEW`: rewrites a checkpoint of ltfit's old format
// (formats 1 and 2: a LibTorch serialize archive, i.e. TorchScript) in the current data-only
// format (train/checkpoint.h), keeping weights, optimizer state, position, scaler and RNG
// states, so that `train --resume NEW` continues exactly where OLD would have.
//
// Reading the old format goes through torch::jit::load, which compiles the code stored in the
// archive and runs every __setstate__ in it: a crafted file runs whatever it likes. Hence
// `trust_code`, for files the user made. Not thread-safe.
#pragma once

#include <string>

namespace ltfit {

// Converts `old_path` to `new_path`. Without `trust_code`, or when NEW is OLD: ConfigError (exit
// 2) before the file is opened; a missing or unreadable old checkpoint: CheckpointError (exit 4).
void run_convert_checkpoint_job(const std::string& old_path, const std::string& new_path,
                                bool trust_code);

}  // namespace ltfit
