// `ltfit lr-find`: fastai's LR range test (train/lr_finder.h) on the model, data and optimizer a
// training run of the config would build (training_setup.h), under its train.precision and
// channels_last; writes lr_find.csv (step,lr,loss,smoothed_loss) and lr_find.png (the smoothed
// loss over the LR, log scale, decade ticks, the valley and steepest suggestions marked and named
// with their values in the legend). Not thread-safe.
#pragma once

#include <string>

#include "ltfit/config/config.h"
#include "ltfit/pictures/plot.h"
#include "ltfit/train/lr_finder.h"

namespace ltfit {

struct LrFindJobOptions {
  std::string out;  // folder for the outputs; empty: a new run directory <run.name>-lr_find
  int steps = 100;  // steps of the sweep at most (fastai: 100)
};

struct LrFindJobResult {
  LrFindResult sweep;  // the LRs, losses and suggestions
  std::string dir;     // where lr_find.csv and lr_find.png were written
};

// Runs the sweep as the model starts the recipe (frozen for fine_tune). The output folder is
// created (or the run directory created and locked) before the data is read, after checking
// that neither it nor its files are the config or labels file (ConfigError, exit 2); an
// out-of-memory error in the sweep names data.batch_size (OutOfMemoryError, exit 5).
LrFindJobResult run_lr_find_job(Config config, const LrFindJobOptions& options);

// lr_find.png's chart of a sweep: the smoothed loss over the LR (log x, fastai's Recorder.plot
// range: without the first 10 and last 5 points when there are enough), a marker for each
// suggestion there is, named "valley: 0.00105" / "steepest: 0.0302".
LineChart lr_find_chart(const LrFindResult& sweep);

}  // namespace ltfit
