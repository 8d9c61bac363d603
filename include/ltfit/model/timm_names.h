// timm's parameter names for the families ltfit has, mapped to torchvision's (which ltfit's models
// use), so that timm's weight files (`timm/<name>` on the Hugging Face hub, model.safetensors)
// load as torchvision's do. ResNet: timm uses torchvision's names. ConvNeXt: stem.*, stages.S
// (downsample, blocks.B: conv_dw, norm, mlp.fc1/fc2, gamma), head.norm/fc. EfficientNet:
// conv_stem, bn1, blocks.S.B (depthwise-separable and inverted-residual blocks, se.conv_reduce/
// conv_expand), conv_head, bn2, classifier. ViT: cls_token, pos_embed, patch_embed.proj,
// blocks.B (norm1, attn.qkv, attn.proj, norm2, mlp.fc1/fc2), norm, head. Thread-safe.
#pragma once

#include <string>

#include "ltfit/model/torch_weights.h"

namespace ltfit {

// `state` with torchvision's names when it holds timm's names for `family` ("resnet", "convnext",
// "efficientnet", "vit"); as it is otherwise (torchvision's own files, ltfit's exports). A tensor
// whose timm shape differs from torchvision's only by unit dims (ConvNeXt's gamma [C],
// torchvision's layer_scale [C,1,1]) is reshaped. Throws CheckpointError naming `source` and the
// key for a timm name the map does not know. `mapped`, when given, is set to whether the names were
// timm's.
StateDict from_timm_names(StateDict state, const std::string& family, const std::string& source,
                          bool* mapped = nullptr);

}  // namespace ltfit
