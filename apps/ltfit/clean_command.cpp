// `ltfit clean`: mislabeled images, duplicates and leaks, unusable files of a dataset, found
// with a trained checkpoint; --apply moves them aside, --undo moves them back (clean_job.h).
#include <CLI/CLI.hpp>

#include "cli_common.h"
#include "commands.h"
#include "ltfit/jobs/clean_job.h"
#include "ltfit/util/signals.h"
#include "ltfit/util/standard_output.h"

namespace ltfit::cli {

namespace {

struct CleanArgs {
  CleanRequest job;
  std::string undo;
  bool json = false;
};

void run_clean(CleanArgs& args) {
  if (!args.undo.empty()) {
    // A stop finishes the file being moved and exits 130; a rerun goes on from there.
    StopSignals signals(StopMode::kFinishWork);
    const UndoResult back = undo_clean(args.undo, [] { return StopSignals::requested(); });
    write_stdout("moved " + std::to_string(back.moved_back) + " files back; " +
                 std::to_string(back.already_back) + " were already in place\n");
    return;
  }
  if (args.job.checkpoint.empty()) {
    throw ConfigError("clean needs --checkpoint (or --undo MANIFEST)",
                      "pass the checkpoint of a model trained on the dataset");
  }
  // Cross-fitting's training checkpoints and stops (exit 130); without it nothing is saved that
  // a stop could lose, so it exits at once.
  StopSignals signals(args.job.folds > 1 ? StopMode::kFinishWork : StopMode::kExitNow);
  args.job.stop_signal = [] { return StopSignals::requested(); };
  const CleanResult result = run_clean_job(args.job);
  write_stdout(args.json ? clean_json(result) + "\n" : clean_table(result));
}

}  // namespace

void add_clean_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<CleanArgs>();
  CleanRequest& r = args->job;
  CLI::App* cmd = app.add_subcommand(
      "clean",
      "find mislabeled images (confident learning), exact and near duplicates (within a split, "
      "and leaks across train/valid) and unusable files, with a trained checkpoint. Writes "
      "suggestions.csv (path,problem,split,given,suggested,score,detail) and a picture per "
      "kind; --apply moves the files into <out>/quarantine/ (never deletes) with a manifest "
      "that --undo reverses");
  cmd->add_option("--checkpoint", r.checkpoint, "checkpoint of a model trained on the data");
  cmd->add_option("--data", r.data, "dataset root (default: the checkpoint's data.root)");
  cmd->add_option("--out", r.out,
                  "output folder (default: <run dir>/clean for a checkpoint in a run directory, "
                  "else ./clean)");
  cmd->add_option("--folds", r.folds,
                  "cross-fit the training split: train the checkpoint's recipe K times, each on "
                  "all but one fold, for out-of-sample probabilities (default: in-sample)");
  cmd->add_option("--max-distance", r.max_distance,
                  "near duplicates: perceptual-hash bits (of 64) that may differ")
      ->capture_default_str();
  cmd->add_option("--kinds", r.kinds,
                  "problem kinds --apply moves: mislabeled duplicate leak unusable")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--filter-by", r.filter_by,
                  "which images are label issues: prune_by_noise_rate (cleanlab's default), "
                  "confident_learning (confident in another class), predicted_neq_given, "
                  "prune_by_class, both (docs/clean.md)")
      ->capture_default_str();
  cmd->add_option("--judge", r.judge,
                  "label issues: per_split (each split's own thresholds), together (all images "
                  "at once), auto (per_split unless --folds; docs/clean.md)")
      ->capture_default_str();
  cmd->add_flag("--apply", r.apply, "move the flagged files of --kinds into <out>/quarantine/");
  cmd->add_flag("--relabel", r.relabel,
                "with --apply: move a mislabeled file into its suggested class folder instead");
  cmd->add_option("--undo", args->undo, "move back the files of a manifest.csv --apply wrote");
  add_checkpoint_run_options(cmd, r.device, r.precision);
  add_json_flag(cmd, args->json);
  cmd->callback([args, exit_code] {
    run_clean(*args);
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
