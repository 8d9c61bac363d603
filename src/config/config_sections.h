// The config walk's sections kept in files of their own (src/config only, never installed):
// config_loader.cpp's convert_config reads `data:` through convert_data (config_data_keys.cpp)
// and `train:` through convert_train (config_train_keys.cpp).
#pragma once

#include "config/config_yaml.h"
#include "ltfit/config/config.h"

namespace ltfit::config_internal {

// `data:` and its maps (csv, augment, augment.rand_augment, augment.random_erasing).
void convert_data(const Walk& walk, const Located& at, DataConfig& data);
// `train:` and its maps (optimizer, one_cycle, flat_cos, mixup, ema, early_stopping, checkpoint).
void convert_train(const Walk& walk, const Located& at, TrainConfig& train);

}  // namespace ltfit::config_internal
