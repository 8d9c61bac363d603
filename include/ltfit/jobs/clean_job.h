// `ltfit clean`: finds what is wrong with a dataset, given a model trained on it, and (with
// --apply) moves it aside. Past fastai's ImageClassifierCleaner, a widget clicked through image
// by image: the suspicious images are found and ranked here.
//
// Three kinds of problem, each a row of suggestions.csv
// (path,problem,split,given,suggested,score,detail) and a picture:
//   mislabeled  confident learning (Northcutt et al. 2021; cleanlab's find_label_issues with its
//               defaults, eval/label_issues.h) on out-of-sample probabilities: the validation
//               split's are; the training split's are in-sample (the checkpoint saw them) unless
//               `folds` > 1 cross-fits them: the checkpoint's recipe trained `folds` times, each
//               time on all but one fold, predicting that fold. score: the given label's
//               probability (lower is more suspicious). -> mislabeled.png
//   duplicate   the same content (SHA-256) or a near copy (perceptual hash within max_distance
//   leak        bits, data/duplicates.h) in one split (duplicate), or across train and valid
//               (leak: the validation figure is inflated). Every member but the one kept is a
//               row: within a split the first path is kept; for a leak the validation copies
//               are the rows. score: Hamming distance to the kept image. -> duplicates.png
//   unusable    unreadable, over the pixel budget, smaller than 32 px or an aspect ratio beyond
//               5 (data/image_problems.h). -> unusable.png
//
// --apply moves the rows' files of the chosen kinds into <out>/quarantine/<path relative to the
// dataset root> (--relabel: a mislabeled file into its suggested class folder instead, for the
// folders layout); a symbolic link moves as the link. Each move is first appended to
// <out>/quarantine/manifest.csv (original,moved_to,problem; absolute paths) and the line synced
// to disk, then made, so a crash leaves a manifest that `ltfit clean --undo` reverses. Nothing is
// ever deleted, and every move is checked possible (source and destination folders writable,
// destination free) before the first one is made. `out` must lie outside the dataset root (the
// next training would index the quarantine and the pictures). Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ltfit/data/sample.h"

namespace ltfit {

struct CleanRequest {
  std::string checkpoint;  // --checkpoint
  std::string data;        // --data: dataset root; empty: the checkpoint's data.root
  std::string out;         // --out; empty: <run dir>/clean for a checkpoint in one, else ./clean
  int folds = 0;           // --folds K: cross-fit the training split (0 or 1: in-sample)
  int max_distance = 8;    // --max-distance: perceptual hash bits for a near duplicate
  std::vector<std::string> kinds = {"mislabeled", "duplicate", "leak", "unusable"};
  bool apply = false;    // --apply: move the files of `kinds`
  bool relabel = false;  // --relabel: mislabeled files into their suggested class folder
  std::string device = "auto";
  std::string precision;
  // Which rows confident learning flags (LabelIssueOptions::filter_by, eval/label_issues.h).
  std::string filter_by = "prune_by_noise_rate";
  // --judge: per_split (each split's own thresholds: training probabilities in-sample are
  // over-confident beside validation's), together (all images at once, as cleanlab is called
  // on one array), or auto (per_split, unless --folds makes every probability out-of-sample).
  std::string judge = "auto";
  // Cross-fitting's training, and --apply between two moves, stop (exit 130) when true.
  std::function<bool()> stop_signal;
};

struct Suggestion {
  std::string path;
  std::string problem;  // mislabeled | duplicate | leak | unusable
  std::string split;    // train | valid
  std::string given;    // the given label ("" when unknown)
  std::string suggested;
  double score = 0.0;
  std::string detail;  // e.g. the kept copy, the problem's reason
  // The pictures: the sample's pixels and, for a duplicate, the kept copy's, where the source
  // holds them (CIFAR's records); empty for files, which the report reads from `path`.
  SampleImage image = {};
  SampleImage kept_image = {};
};

struct Move {
  std::string original;
  std::string moved_to;
  std::string problem;
};

struct CleanResult {
  std::string root;
  std::string out_dir;
  std::int64_t images = 0;          // indexed images looked at
  std::string train_probabilities;  // "in-sample" | "cross-fitted (K folds)"
  std::string judged;               // "per split" | "together"
  double flagged_fraction = 0.0;    // mislabeled rows / images judged
  std::vector<Suggestion> suggestions;
  std::string probabilities_csv;   // path,split,given,prob_<class>... of every image judged
  std::vector<std::string> files;  // suggestions.csv, probabilities.csv, pictures
  std::vector<Move> moves;         // --apply
  std::string manifest;            // --apply: the manifest written
};

// Runs it. Exit codes: 2 bad arguments, 3 the data, 4 the checkpoint, 5 an output that cannot
// be written or a move that cannot be made (named; nothing moved then).
CleanResult run_clean_job(const CleanRequest& request);

// What `ltfit clean --undo` did.
struct UndoResult {
  std::int64_t moved_back = 0;       // moved from quarantine to their place
  std::int64_t already_back = 0;     // in their place already (moved back before, or never moved)
  std::vector<std::string> missing;  // in neither place (a quarantined file deleted): not restored
};

// `ltfit clean --undo MANIFEST`: moves the files of the manifest back, last move first, and
// renames it <name>.undone. Resumable and idempotent: each line's state is read from the file
// system (back already or never moved: skipped; quarantined: moved back; in neither place:
// missing). A relative path (manifests of older versions) is resolved against the current folder.
// Refuses (exit 5, nothing moved) when a place is taken by another file or a folder is not
// writable. When `stop_signal` turns true it stops between two files (InterruptedError, exit
// 130); a rerun goes on. Missing files: the rest are moved back, then DataError (exit 3) names
// them and the manifest stays.
UndoResult undo_clean(const std::string& manifest, const std::function<bool()>& stop_signal = {});

std::string clean_table(const CleanResult& result);
std::string clean_json(const CleanResult& result);

}  // namespace ltfit
