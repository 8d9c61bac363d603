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

#include <string>

#include "ltfit/model/arch_registry.h"

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

// Checks timm/<name>'s config.json against `arch`: its "architecture" must be arch.name, and its
// pretrained_cfg mean and std ltfit's for the arch (ltfit normalises with the arch's). ConfigError
// (exit 2) naming both otherwise; CheckpointError for a config.json that is not such a file.
void check_timm_config(const std::string& config_path, const ArchInfo& arch,
                       const std::string& name);

}  // namespace ltfit
