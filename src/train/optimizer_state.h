// An optimizer's state in checkpoints, in the shape of PyTorch's `Optimizer.state_dict()` (private
// to src/train).
//
//   {"state": {i: {"step": int, "exp_avg": T, "exp_avg_sq": T[, "max_exp_avg_sq": T]}  (AdamW)
//              i: {"momentum_buffer": T}                                               (SGD)
//              i: {"exp_avg": T, "exp_avg_sq": T}                                      (Lamb)
//              i: {"step": int, "square_avg": T[, "momentum_buffer": T][, "grad_avg": T]}
//                                                                                 (RMSpropTF)
//   "param_groups": [{"lr": f, "betas": (f, f), "eps": f, "weight_decay": f, "amsgrad": b,
//                     ..., "params": [i, ...]}, ...]}
//
// where i numbers the parameters across the groups in order, as PyTorch does; a group holds the
// optimizer's keyword arguments under PyTorch's (timm's) names, so that torch.optim.AdamW / SGD
// and timm.optim.Lamb / RMSpropTF.load_state_dict accept the dict. timm's Lamb keeps its step
// per group: its group's "step" is a 0-dim float32 tensor, as timm's own (timm adds to it in
// place). A step read back may be an int or such a tensor. Only parameters
// that have a state (that have been stepped) appear in "state". Reading checks every group, index
// and shape against the optimizer before changing anything, and restores the state exactly (the
// tensors are copied into new tensors like the parameters, same device and memory format), so
// that training continues bit for bit.
#pragma once

#include <functional>
#include <string>

#include <torch/optim/optimizer.h>

#include "ltfit/formats/torch_archive.h"
#include "train/checkpoint_fields.h"

namespace ltfit::detail {

// What a checkpoint cannot hold, said by both halves (a programming error: make_optimizer builds
// only these).
inline constexpr const char* kOptimizerTypesHeld =
    "checkpoints hold AdamW, SGD, Lamb or RMSpropTF optimizers only";

// "AdamW", "SGD", "Lamb" or "RMSpropTF" (the optimizers make_optimizer builds); "none" without
// parameter groups, "other" for any other optimizer (which checkpoints cannot hold).
const char* optimizer_type(const torch::optim::Optimizer& optimizer);

// Pushes the state dict onto `out`'s pickle.
void write_optimizer_state(TorchArchiveWriter& out, const torch::optim::Optimizer& optimizer);

// Checks `value` (at `key_path`) against `optimizer`; returns what sets it, changing nothing yet.
std::function<void()> stage_optimizer_state(const CheckpointFields& fields,
                                            const pickle::PickleValue& value,
                                            const std::string& key_path,
                                            torch::optim::Optimizer& optimizer);

}  // namespace ltfit::detail
