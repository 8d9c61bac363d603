// The pieces of `ltfit clean` (clean_job.h): probabilities, cross-fitting, moves and reports,
// each in a file of its own. Not thread-safe.
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "ltfit/data/dataset_index.h"
#include "ltfit/data/image_header.h"
#include "ltfit/jobs/checkpoint_eval.h"
#include "ltfit/jobs/clean_job.h"
#include "ltfit/pictures/image_grid.h"

namespace ltfit {

// An indexed image and the split it is in.
struct CleanSample {
  Sample sample;
  std::string split;  // train | valid
};

// The name of class `k` ("" outside `classes`).
std::string class_name(const std::vector<std::string>& classes, std::int64_t k);
// The given label of `s` in words: its class, or (multi-label) its classes joined by spaces.
std::string given_labels(const std::vector<std::string>& classes, const Sample& s,
                         bool multi_label);

// Mislabeled rows (clean_labels.cpp): confident learning on the probabilities of the `usable`
// images of `all` (validation: the checkpoint's; training: in-sample, or cross-fitted into
// <out>/folds), appended to result.suggestions; also sets result's train_probabilities, judged,
// flagged_fraction and probabilities_csv.
void find_mislabeled_rows(const CleanRequest& request, const Config& config,
                          const std::vector<CleanSample>& all,
                          const std::vector<std::size_t>& usable,
                          const std::vector<std::string>& classes, const std::filesystem::path& out,
                          CleanResult& result);

// Softmax probabilities [samples.size(), classes] float of `loaded` on `samples` (the
// validation transform); rows of images that could not be decoded are NaN.
torch::Tensor clean_probabilities(LoadedModel& loaded, const std::vector<Sample>& samples,
                                  const EvalOptions& options);

// Out-of-sample probabilities of the training samples: `folds` models trained with `config`'s
// recipe, each on the other folds (drawn by config.run.seed), predicting its own fold. Runs go
// into <work>/fold-<k>/. The folds are written as a CSV layout over `root`.
torch::Tensor cross_fitted_probabilities(const Config& config, const std::string& root,
                                         const std::vector<Sample>& train,
                                         const std::vector<std::string>& classes, int folds,
                                         const std::string& work, const CleanRequest& request);

// --apply: plans every move of `suggestions` whose problem is in request.kinds (a path once),
// checks them all, then for each appends (and syncs) its line to <out>/quarantine/manifest.csv
// and moves it. Stops between two moves when request.stop_signal turns true (exit 130).
void apply_clean(const CleanRequest& request, const std::string& root, const std::string& layout,
                 CleanResult& result);

// Whether anything (a file, a folder, a link, dangling or not) is at `path`.
bool path_present(const std::string& path);
// Why the folders of `move` cannot be written (each probed once, remembered in `checked_dirs`),
// or "" when they can.
std::string folders_problem(const Move& move, std::set<std::string>& checked_dirs);
// Renames move.original to move.moved_to, creating the destination's folder; a link moves as the
// link. Across file systems: copied into place under a temporary name, then the original
// removed. WriteError names both paths, with `hint`.
void make_move(const Move& move, const std::string& hint);

// suggestions.csv's text.
std::string suggestions_csv(const std::vector<Suggestion>& suggestions);
// The picture of one problem kind's rows (at most a few dozen), or nullopt when it has none.
// Thumbnails are decoded within `limits` (the config's data.max_pixels and formats).
std::optional<EncodedPng> suggestions_png(const std::vector<Suggestion>& suggestions,
                                          const std::string& problem, const ImageLimits& limits);

}  // namespace ltfit
