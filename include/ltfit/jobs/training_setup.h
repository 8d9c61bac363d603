// The parts a training run is made of, built once from a config: the indexed data, its loaders,
// the model (on the device, channels_last when train.channels_last) and the optimizer over the
// model's layer groups. `ltfit train` (run_train_job) and `ltfit lr-find` build them here, so
// the sweep measures what training will run; find-batch builds a model per trial instead.
//
// Seeding, the precision check and the backend settings stay with the caller (train does them
// before, lr-find checks the precision after). Not thread-safe; the loaders' worker threads
// stop when the setup is destroyed.
#pragma once

#include <memory>

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include "ltfit/config/config.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/data/device_cache.h"
#include "ltfit/data/loader.h"
#include "ltfit/model/classifier.h"
#include "ltfit/train/trainer.h"

namespace ltfit {

struct TrainingSetup {
  DatasetIndex index;  // classes, train and valid samples
  LoaderOptions train_options, valid_options;
  std::unique_ptr<Loader> train_loader;  // shuffled, augmented
  // data.cache: device: the training batches, drawn on the device; null: train_loader's.
  std::unique_ptr<DeviceCacheSource> device_batches;
  std::unique_ptr<Loader> valid_loader;  // in order; null unless asked for, or with no
                                         // validation split (data.valid_pct 0)
  Classifier model{nullptr};             // on the device, in channels_last if configured
  std::unique_ptr<torch::optim::Optimizer> optimizer;  // train.optimizer, one group per layer group
  torch::Tensor class_weights;  // train.class_weights per class (CPU); undefined for none
  // Multi-label only: the validation thresholds (one per class) and train.pos_weight per class
  // (CPU; undefined for none). Empty thresholds: single-label.
  std::vector<double> thresholds;
  torch::Tensor pos_weight;
};

// Indexes config.data, starts the loaders (batches pinned for a CUDA `device`; the validation
// loader only when `with_valid`), builds the model and the optimizer. Logs the data and the
// loader. Throws DataError for data that cannot be indexed, ConfigError/CheckpointError for
// weights that cannot be had or read (model_factory.h).
// In a data-parallel run (`dist` active) the training loader delivers this rank's slice of
// each global batch, the validation loader this rank's part of the validation set (shard.h),
// and the loaders' workers are this process's share of the machine.
struct DistSession;

// How the Trainer runs a step under `config` (device, memory format, precision, the loss's label
// smoothing and the setup's class weights; the data-parallel `group`, null for one process):
// train and lr-find share it, so the sweep measures the step training will take.
TrainerOptions trainer_options(const Config& config, const TrainingSetup& setup,
                               const torch::Device& device, DistGroup* group = nullptr);

// train.class_weights for the training images of `index`: undefined for none; balanced is
// n / (classes × count) (scikit-learn's compute_class_weight). ConfigError (exit 2) for a list
// of the wrong length, or balanced with a class that has no training image. Logs the weights.
torch::Tensor class_weight_tensor(const ClassWeights& weights, const DatasetIndex& index);

// Multi-label: eval.thresholds (which must have one per class: ConfigError otherwise) or
// eval.threshold for every class. Empty when the config's task is single-label.
std::vector<double> class_thresholds(const Config& config, std::size_t classes);

// train.pos_weight for the training images of `index` (multi-label): undefined for none;
// balanced is negatives / positives per class. ConfigError for a list of the wrong length.
torch::Tensor pos_weight_tensor(const ClassWeights& weights, const DatasetIndex& index);

TrainingSetup make_training_setup(const Config& config, const torch::Device& device,
                                  bool with_valid, const DistSession* dist = nullptr);

}  // namespace ltfit
