// What a resume checks before training on: that the run's best.ckpt holds the epoch its
// checkpoint records as the best, and the repair when it does not.
//
// The checkpoint writer puts best.ckpt durably in place before the checkpoint that records it as
// the best (checkpoint_writer.h). A crash between the two still leaves best.ckpt one epoch ahead
// of last.ckpt; earlier versions wrote them the other way round (a crash or a full disk left
// best.ckpt missing or stale); and a user may delete or replace it. Unchecked, the resumed run's
// summary.json would then name a best accuracy that best.ckpt does not hold.
#pragma once

#include <string>

#include "ltfit/config/config_enums.h"
#include "ltfit/model/classifier.h"
#include "ltfit/train/checkpoint.h"

namespace ltfit {

// Checks `<checkpoint_dir>/best.ckpt` against `resumed`, the metadata of the checkpoint
// `resumed_path` the run continues from, whose weights `model` holds. Returns `resumed` with its
// record of the best (best_accuracy and the hook state "best_checkpoint") made true:
// - best.ckpt holds the recorded best epoch, or nothing is recorded yet: unchanged;
// - otherwise (missing, unreadable, another epoch), when `resumed` ends an epoch whose `monitor`
//   figure it knows: best.ckpt is written from `model` and that epoch becomes the recorded best
//   (the same record when it was the best; a warning names the best whose weights are lost);
// - otherwise (a mid-epoch checkpoint): a warning, and the record is cleared, so that the next
//   epoch's end writes best.ckpt anew.
// A failed write throws RuntimeError (exit 5).
CheckpointMeta check_best_checkpoint(const std::string& checkpoint_dir,
                                     const std::string& resumed_path, CheckpointMeta resumed,
                                     Classifier& model, Monitor monitor);

}  // namespace ltfit
