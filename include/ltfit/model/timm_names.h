// timm's parameter names for the families ltfit has, mapped to torchvision's (which ltfit's models
// use), so that timm's weight files (`timm/<name>` on the Hugging Face hub, model.safetensors)
// load as torchvision's do. ResNet: timm uses torchvision's names. ConvNeXt: stem.*, stages.S
// (downsample, blocks.B: conv_dw, norm, mlp.fc1/fc2, gamma), head.norm/fc. EfficientNet:
// conv_stem, bn1, blocks.S.B (depthwise-separable and inverted-residual blocks, se.conv_reduce/
// conv_expand), conv_head, bn2, classifier. ViT: cls_token, pos_embed, patch_embed.proj,
// blocks.B (norm1, attn.qkv, attn.proj, norm2, mlp.fc1/fc2), norm, head. RegNet-Y: stem.conv/bn,
// sS.bB (conv1, conv2, se.fc1/fc2, conv3 as .conv/.bn, downsample.conv/.bn), head.fc (timm's
// regnety_016 and regnety_008_tv; its regnety_008 has other widths than torchvision's
// regnet_y_800mf and fails the load by shape). MobileNetV3: conv_stem, bn1, blocks.S.B
// (depthwise-separable, inverted-residual and the last conv-bn blocks, numbered into torchvision's
// flat features), conv_head (a 1x1 conv: torchvision's classifier.0 Linear), classifier; timm's
// BatchNorm eps is 1e-5, torchvision's 1e-3, so running_var is shifted by 1e-5 - 1e-3 to give
// the same outputs. Thread-safe.
#pragma once

#include <string>

#include "ltfit/model/torch_weights.h"

namespace ltfit {

// `state` with torchvision's names when it holds timm's names for `family` ("resnet", "convnext",
// "efficientnet", "vit", "regnet", "mobilenet_v3"); as it is otherwise (torchvision's own files,
// ltfit's exports). A tensor whose timm shape differs from torchvision's only by unit dims
// (ConvNeXt's gamma [C], torchvision's layer_scale [C,1,1]; MobileNetV3's conv_head [O,I,1,1],
// torchvision's Linear [O,I]) is reshaped. Throws CheckpointError naming `source` and the key for
// a timm name the map does not know. `mapped`, when given, is set to whether the names were
// timm's.
StateDict from_timm_names(StateDict state, const std::string& family, const std::string& source,
                          bool* mapped = nullptr);

}  // namespace ltfit
