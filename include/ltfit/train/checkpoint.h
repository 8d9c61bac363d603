// Checkpoint files: model weights, optimizer state, progress and the resolved config.
//
// A checkpoint (format 3) is a `torch.save` archive holding data only: a dict of plain values
// (format, config text, classes, counters, position, loss scaler), the model's parameters and
// buffers as an OrderedDict of tensors, the optimizer state in the shape of PyTorch's
// `Optimizer.state_dict()` ({"state": {index: {...}}, "param_groups": [...]}) and the random
// generators' states as uint8 tensors. Entries added since (`phase_seconds`, `decode_failures`,
// `hook_states`) are optional: a file without them loads with their defaults. Python reads one with
// `torch.load(path, weights_only=True)`; ltfit reads it with its restricted reader
// (torch_archive.h), which runs nothing in the file. A TorchScript archive (what ltfit wrote before
// format 3) is refused from its record names, before anything in it is read, with a hint to `ltfit
// convert-checkpoint`. Saving writes to `<path>.tmp`, flushes it and renames it over `path`, so a
// crash or a full disk never destroys the previous file. Loading checks every tensor's name and
// shape before touching the model or the optimizer and throws CheckpointError (exit 4) naming the
// file for anything missing, corrupt or mismatched; a failed save throws RuntimeError (exit 5).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <torch/optim/optimizer.h>

#include "ltfit/model/classifier.h"
#include "ltfit/run/timing.h"
#include "ltfit/train/amp.h"
#include "ltfit/util/error.h"
#include "ltfit/util/read_limits.h"

namespace ltfit {

// Where training stands in the recipe: enough, with the RNG states, to continue exactly.
struct TrainPosition {
  int stage = 0;                    // index of the current stage in plan_recipe() order
  int epoch_in_stage = 0;           // completed epochs of that stage
  std::int64_t batch_in_epoch = 0;  // completed batches of the current epoch (0: epoch boundary)
  double loss_avg = 0.0;            // fastai's smoothed-loss accumulator (reset per stage)
  std::int64_t loss_count = 0;      // steps in that accumulator

  bool operator==(const TrainPosition&) const = default;
};

// Training images whose header passed the loader's check but whose decoding failed (positions in
// the training sample list, ascending). Such a file is refilled in its batch for the rest of the
// epoch that found it and left out of every later epoch's plan; a data-parallel run shares what
// each rank found (at each epoch end and before each checkpoint), so every rank plans the same.
struct DecodeFailures {
  std::vector<std::int64_t> left_out;  // what the current epoch's plan leaves out
  std::vector<std::int64_t> found;     // every one found so far: the next epoch leaves them out

  bool operator==(const DecodeFailures&) const = default;
};

// A hook's own state, kept in the checkpoint so that a resumed run continues it (Hook::save_state,
// hooks.h): a weight average, a plateau counter, early stopping's best value. Saved as
// `hook_states: {name: {"version": int, "tensors": {key: tensor}, "scalars": {key: float}}}`;
// read with the archive's limits, tensors on the CPU. The hook checks `version` when it loads.
struct HookState {
  std::string name;  // unique among a fit's hooks
  std::int64_t version = 1;
  std::map<std::string, torch::Tensor> tensors;
  std::map<std::string, double> scalars;
};

struct CheckpointMeta {
  std::string config_yaml;           // the resolved config of the run
  std::vector<std::string> classes;  // class names, label order
  int epochs_done = 0;               // completed epochs (global)
  std::int64_t global_step = 0;      // completed optimizer steps
  double accuracy = 0.0;             // validation accuracy after the last completed epoch
  double valid_loss = 0.0;           // validation loss after the last completed epoch
  TrainPosition position;            // where to continue
  double best_accuracy = -1.0;       // best validation accuracy so far (-1: none yet)
  GradScalerState scaler;            // fp16 loss scaler
  double train_seconds = 0.0;        // training wall time so far, over every session
  // The profiler's exclusive seconds per phase so far, over every session (timing.json of a
  // resumed run sums them); zeros in a file written before ltfit kept them.
  PhaseSeconds phase_seconds{};
  // Decoding failures so far (empty in a file written before ltfit kept them).
  DecodeFailures decode_failures;
  // The hooks' own states, by name (none in a file written before ltfit kept them).
  std::vector<HookState> hook_states;
  // Read only: the file holds no optimizer state (best.ckpt, or save_checkpoint without an
  // optimizer). It loads for evaluation, predict, export and `train --init-from`, not --resume.
  bool weights_only = false;
};

// States of the global random generators (torch's Generator::get_state(): 1-D uint8 tensors).
struct RngStates {
  torch::Tensor cpu;
  std::vector<torch::Tensor> cuda;  // one per CUDA device, in device order (empty without CUDA)
};

// The global CPU generator's state, and each CUDA device's where CUDA is available.
RngStates capture_rng_states();

// Writes atomically; `optimizer` may be null (weights-only checkpoint). Stores `rng`, by default
// the global generators' states.
void save_checkpoint(const std::string& path, Classifier& model, torch::optim::Optimizer* optimizer,
                     const CheckpointMeta& meta);
void save_checkpoint(const std::string& path, Classifier& model, torch::optim::Optimizer* optimizer,
                     const CheckpointMeta& meta, const RngStates& rng);

// The error (exit 4) for continuing a run from a weights-only checkpoint: it points to last.ckpt
// and to `ltfit train --init-from`.
CheckpointError weights_only_error(const std::string& path);

// Reads only the metadata (to rebuild the model from its config).
CheckpointMeta read_checkpoint_meta(const std::string& path);

// Loads weights (and optimizer state when `optimizer` is non-null) into already-built objects;
// with `restore_rng` also sets the global CPU (and CUDA, where saved and present) generators to
// the saved states, as resuming needs. Nothing is changed unless everything checks out.
CheckpointMeta load_checkpoint(const std::string& path, Classifier& model,
                               torch::optim::Optimizer* optimizer, bool restore_rng = false);

// load_checkpoint on a checkpoint's bytes in memory, `name` standing for the file in messages
// (what the fuzz target calls: no file system). Errors as above.
CheckpointMeta load_checkpoint_from_bytes(std::string_view bytes, const std::string& name,
                                          const ReadLimits& limits, Classifier& model,
                                          torch::optim::Optimizer* optimizer,
                                          bool restore_rng = false);

// The optimizer's state and hyper-parameters as bytes (a torch.save archive of its state dict),
// and back into the same optimizer (lr_find restores its optimizer with them).
std::string save_optimizer_state(torch::optim::Optimizer& optimizer);
void load_optimizer_state(torch::optim::Optimizer& optimizer, const std::string& bytes);

}  // namespace ltfit
