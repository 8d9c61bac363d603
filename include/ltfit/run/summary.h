// summary.json: the final figures of a run (README.md "The run directory"), written atomically.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ltfit/data/decode_cache.h"

namespace ltfit {

struct RunSummary {
  std::string run_dir;               // where the run lives
  std::string arch;                  // model.arch
  std::string device;                // e.g. "cpu (2 threads)"
  std::vector<std::string> classes;  // label order
  int epochs = 0;                    // epochs trained over all stages
  std::int64_t train_images = 0;     // readable training images (each epoch's plan)
  // training files found unreadable: by the header check, or when decoding failed (in the last
  // epoch too); train_images + train_skipped_images is the training set's size
  std::int64_t train_skipped_images = 0;
  std::int64_t valid_images = 0;  // validation set size
  // validation files skipped as unreadable: the final figures cover valid_images less these
  std::int64_t valid_skipped_images = 0;
  double accuracy = 0.0;                      // final plain validation accuracy
  double error_rate = 0.0;                    // 1 - accuracy
  double valid_loss = 0.0;                    // final validation loss
  std::optional<double> tta_accuracy;         // with test-time augmentation (null when not run)
  double best_accuracy = 0.0;                 // best epoch's accuracy (best.ckpt)
  double setup_seconds = 0.0;                 // this session's set-up before the first step:
                                              // indexing, model build, weight download
  double train_seconds = 0.0;                 // training incl. per-epoch validation, from the
                                              // first step, summed over resumed sessions
  std::optional<double> tta_seconds;          // TTA evaluation (null when not run)
  double total_seconds = 0.0;                 // train + TTA, as the study counts it
  std::int64_t skipped_images = 0;            // unreadable images skipped
  std::vector<std::string> skipped_examples;  // "path: reason" for the first few
  std::optional<DecodedImageCacheStats> data_cache;  // data.cache: ram (null: none)
  int world_size = 1;                                // processes that trained (data-parallel ranks)
  std::string backend = "none";                      // their process group: gloo | nccl | none
  std::int64_t global_batch = 0;  // images per batch over all ranks (data.batch_size)
  std::string weights = "model";  // what the final figures used: model | ema (train.ema.validate)
  std::string stopped_early;      // why early stopping ended the run (JSON null: it did not)
  bool owner = true;  // this process owns the run directory (not in JSON: rank 0 of a group)
  // model.task resolved; multi_label: accuracy is fastai's accuracy_multi, and the final
  // epoch's F1s and mAP at `thresholds` (and with TTA, when run) are in the JSON too.
  bool multi_label = false;
  std::vector<double> thresholds;
  double f1_samples = 0.0;
  double f1_macro = 0.0;
  double map = 0.0;
  std::optional<double> tta_f1_samples;
  std::optional<double> tta_f1_macro;
  std::optional<double> tta_map;
};

void write_summary(const std::string& path, const RunSummary& summary);

// The same as a JSON string (for --json output).
std::string summary_json(const RunSummary& summary);

}  // namespace ltfit
