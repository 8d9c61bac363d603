// Fuzz target: ltfit's checkpoint reader (src/train/checkpoint.cpp, optimizer_state.cpp) on
// checkpoint contents (archive_input.h) packed into a valid torch.save zip.
//
// The first input byte picks what is read (the rest is the archive contents):
//   0, 1: a checkpoint, read as `train --resume` reads its file: load_checkpoint (which reads
//         the metadata first, as read_checkpoint_meta does) into a resnet18 (2 classes) with an
//         AdamW (0) or SGD (1) optimizer and restore_rng (its *_from_bytes form, with the file's
//         default read limits).
//   2, 3: an optimizer snapshot (load_optimizer_state, the bytes lr_find restores) into an
//         AdamW (2) or SGD (3) optimizer over a Linear(3, 2).
// A checkpoint file may only fail with ltfit::Error (CheckpointError, exit 4); a snapshot also
// with the archive reader's std::runtime_error or c10::Error. Any other exception, a crash or a
// sanitizer report is a finding.
#include <string>

#include <c10/util/Exception.h>
#include <torch/torch.h>

#include "archive_input.h"
#include "checkpoint_fixture.h"
#include "fuzz_checks.h"
#include "ltfit/train/checkpoint.h"
#include "ltfit/util/error.h"
#include "targets.h"

namespace ltfit::fuzz {

namespace {

Outcome read_checkpoint(const std::string& archive, bool sgd) {
  static CheckpointFixture fixture;
  const ReadLimits limits = default_read_limits(archive.size());
  try {
    load_checkpoint_from_bytes(archive, "fuzz.ckpt", limits, fixture.model,
                               sgd ? fixture.sgd.get() : fixture.adamw.get(),
                               /*restore_rng=*/true);
    return Outcome::kAccepted;
  } catch (const Error& e) {
    note_refusal(e.what());
    return Outcome::kRefused;
  }
}

Outcome read_optimizer_snapshot(const std::string& archive, bool sgd) {
  static SnapshotFixture fixture;
  try {
    load_optimizer_state(sgd ? *fixture.sgd : *fixture.adamw, archive);
    return Outcome::kAccepted;
  } catch (const Error& e) {
    note_refusal(e.what());
  } catch (const std::runtime_error& e) {
    note_refusal(e.what());
  } catch (const c10::Error& e) {
    note_refusal(e.what_without_backtrace());
  }
  return Outcome::kRefused;
}

}  // namespace

Outcome run_checkpoint(std::string_view input) {
  if (input.empty()) return Outcome::kRefused;
  const int mode = static_cast<unsigned char>(input[0]) % 4;
  const std::string archive = build_archive(
      decode_archive_input(input.substr(1), mode < 2 ? kModelRecordBytes : kSmallRecordBytes));
  return mode < 2 ? read_checkpoint(archive, /*sgd=*/mode == 1)
                  : read_optimizer_snapshot(archive, /*sgd=*/mode == 3);
}

}  // namespace ltfit::fuzz
