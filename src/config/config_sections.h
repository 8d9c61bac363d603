// The config walk's field lists (src/config only, never installed): convert_config
// (config_loader.cpp) walks the whole config, `data:` through convert_data (config_data_keys.cpp)
// and `train:` through convert_train (config_train_keys.cpp). The walk reads, describes, writes
// or checks, as the Walk says (config_yaml.h).
#pragma once

#include "config/config_yaml.h"
#include "ltfit/config/config.h"

namespace ltfit::config_internal {

// The whole config: run, data, model, train, eval, dist.
void convert_config(const Walk& walk, const Located& at, Config& config);
// `data:` and its maps (csv, augment, augment.rand_augment, augment.random_erasing).
void convert_data(const Walk& walk, const Located& at, DataConfig& data);
// `train:` and its maps (optimizer, one_cycle, flat_cos, mixup, ema, early_stopping, checkpoint).
void convert_train(const Walk& walk, const Located& at, TrainConfig& train);

}  // namespace ltfit::config_internal
