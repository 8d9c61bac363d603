// `model.pretrained: timm/<name>`: timm's weights from the Hugging Face hub, as timm itself reads
// them (the repo timm/<name>, its model.safetensors and config.json).
//
// Where they come from, first found: the Hugging Face cache ($HF_HUB_CACHE, else $HF_HOME/hub,
// else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub: models--timm--<name>/,
// the snapshot refs/main names, else any snapshot holding model.safetensors); ltfit's own copy
// beside torchvision's files (torch_hub_checkpoint_dir()/timm--<name>/); else a download there
// from $HF_ENDPOINT (default https://huggingface.co). The download asks the hub's API for the
// repo's file list first (api/models/timm/<name>/revision/main): model.safetensors' SHA-256 and
// size bound the transfer and verify it, with download_file's guarantees (an unpredictable
// temporary name, renamed only when complete and verified; slow servers given up on; Ctrl-C
// removes it). Thread-safe.
#pragma once

#include <optional>
#include <string>

#include "ltfit/model/arch_registry.h"
#include "ltfit/util/image_normalization.h"

namespace ltfit {

// The Hugging Face hub cache folder (see above). CheckpointError when no variable locates it.
std::string hf_hub_cache_dir();

struct TimmFiles {
  std::string weights;  // model.safetensors
  std::string config;   // config.json ("" when the cache has none)
};

// timm/<name>'s files (`name` passing util/hub_name.h's check), from a cache or downloaded (see
// above). CheckpointError naming the repo and
// the URL when it cannot be had (no such repo, no model.safetensors in it, a hash mismatch).
TimmFiles fetch_timm_weights(const std::string& name);

// What timm's resolve_data_config takes from a config.json's pretrained_cfg.
struct TimmDataConfig {
  std::optional<ImageNormalization> normalization;  // mean and std; absent: not stated
  int input_size = 0;                               // input_size's side, 16..4096 (0: not stated)
  double crop_pct = 0.0;      // eval: Resize(floor(input_size / crop_pct)), CenterCrop(input_size)
  std::string interpolation;  // "bilinear" | "bicubic" ("": not stated, or another filter)
};

// Reads timm/<name>'s config.json (`config_path`; "" reads as nothing stated) for `arch`: its
// "architecture" must be arch.name or timm's name for it (regnety_008_tv, regnety_016,
// mobilenetv3_large_100, mobilenetv3_small_100, vit_base_patch16_224 for regnet_y_800mf,
// regnet_y_1_6gf, mobilenet_v3_large, mobilenet_v3_small, vit_b_16; ConfigError, exit 2, naming
// both otherwise, with a hint for timm's regnety_008, whose widths are not regnet_y_800mf's); its
// pretrained_cfg's mean, std (3 finite numbers, std > 0), input_size, crop_pct and interpolation.
// CheckpointError naming the file for one that is not such JSON, or whose values are out of range.
TimmDataConfig read_timm_config(const std::string& config_path, const ArchInfo& arch,
                                const std::string& name);

// A timm repo's config.json beside `weights` (its model.safetensors, in a hub snapshot or ltfit's
// copy), read as read_timm_config reads it; nullopt when there is none, or it is someone else's
// (no pretrained_cfg). Errors as read_timm_config's.
std::optional<TimmDataConfig> timm_config_beside(const std::string& weights, const ArchInfo& arch,
                                                 const std::string& name);

}  // namespace ltfit
