// Vision Transformer (ViT-B/16) in LibTorch with torchvision's exact module tree, as
// ClassifierImpl.
//
// Names equal torchvision's VisionTransformer: `conv_proj` (the 16x16/16 patch embedding),
// `class_token` [1,1,768] at the model's root, `encoder.pos_embedding` [1,197,768],
// `encoder.layers.encoder_layer_<i>` (ln_1, self_attention.in_proj_weight / in_proj_bias /
// out_proj, ln_2, mlp.0 and mlp.3), `encoder.ln`, and the linear head `heads.head`, so
// torchvision's files load one to one and the parameter count is torchvision's (86,567,656 with
// 1000 classes). Initialisation follows torchvision (truncated-normal patch embedding, xavier
// attention and MLP weights, N(0, 0.02) position embeddings, zero class token and head).
//
// The body ends in a token, not a map: features() is the class token after the final LayerNorm,
// [N,768] (FeatureLayout::kToken). fastai's head on it is create_head(768, pool=False), as fastai
// builds it for a timm ViT; the linear head is torchvision's `heads.head`. Grad-CAM weighs the
// patch tokens entering the last block, laid out on the patch grid (cam_split).
//
// Any input whose sides are multiples of 16 works: when the patch grid differs from the position
// embeddings' (14x14), they are resampled on the fly as timm's resample_abs_pos_embed does
// (bicubic, antialiased, the class token's embedding kept), differentiably, so training at
// data.image_size 160 or a size schedule trains the 14x14 table. A weight file whose table has
// another grid (torchvision's 384 SWAG file) is resampled once when loaded (vit_adapt_tensor).
// The class token and the position embeddings are the first layer group's and get no weight
// decay (timm's no_weight_decay). Stochastic depth (model.drop_path: timm's drop_path_rate,
// linear over the blocks, on both residual branches) is off by default, as in torchvision. fastai's
// layer groups: conv_proj, class token, position embeddings and blocks 0-5 | blocks 6-11 and
// encoder.ln | head. Modules are not thread-safe; use one per thread or guard calls.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include "ltfit/config/config.h"  // HeadKind
#include "ltfit/model/arch_registry.h"
#include "ltfit/model/classifier.h"
#include "ltfit/model/efficientnet.h"  // StochasticDepth

namespace ltfit {

struct ViTSpec {
  std::string arch;                  // vit_b_16
  std::int64_t patch = 16;           // patch side in pixels
  int layers = 12;                   // encoder blocks
  std::int64_t heads = 12;           // attention heads
  std::int64_t hidden = 768;         // token width (feature_channels)
  std::int64_t mlp = 3072;           // MLP hidden width
  std::int64_t image_size = 224;     // the position embeddings' grid is image_size / patch
  double stochastic_depth_prob = 0;  // of the deepest block (timm's drop_path_rate)
  std::int64_t grid() const { return image_size / patch; }
};

// Looks up `arch`; ConfigError for an unknown name.
ViTSpec vit_spec(const std::string& arch);

// timm's resample_abs_pos_embed: `pos` [1, prefix + h*w, C] (a square h = w grid) resampled to
// [1, prefix + grid_h*grid_w, C] by bicubic antialiased interpolation of the grid in float32, the
// `prefix` leading tokens (the class token's) kept. Returns `pos` itself when the grid is already
// grid_h x grid_w.
torch::Tensor resample_position_embedding(const torch::Tensor& pos, std::int64_t grid_h,
                                          std::int64_t grid_w, std::int64_t prefix = 1);

// torchvision's nn.MultiheadAttention(batch_first=True) as self-attention without attention
// dropout: parameters `in_proj_weight` [3C,C], `in_proj_bias` [3C], `out_proj` Linear(C,C).
class SelfAttentionImpl : public torch::nn::Module {
 public:
  SelfAttentionImpl(std::int64_t dim, std::int64_t heads);
  torch::Tensor forward(const torch::Tensor& x);  // [N,L,C] -> [N,L,C]
  std::int64_t heads() const { return heads_; }

  torch::Tensor in_proj_weight, in_proj_bias;
  torch::nn::Linear out_proj{nullptr};

 private:
  std::int64_t heads_;
};
TORCH_MODULE(SelfAttention);

// torchvision's EncoderBlock: x + attn(ln_1(x)), then + mlp(ln_2(.)), each branch dropped per
// sample with probability `drop_path` in training.
class EncoderBlockImpl : public torch::nn::Module {
 public:
  EncoderBlockImpl(const ViTSpec& spec, double drop_path);
  torch::Tensor forward(const torch::Tensor& x);  // [N,L,C] -> [N,L,C]

  torch::nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  SelfAttention self_attention{nullptr};
  torch::nn::Sequential mlp{nullptr};  // 0 Linear, 1 GELU, 2 Dropout, 3 Linear, 4 Dropout

 private:
  StochasticDepth drop_path_{nullptr};
};
TORCH_MODULE(EncoderBlock);

// torchvision's Encoder: pos_embedding, layers.encoder_layer_<i>, ln. The position embeddings
// are added by the model (VisionTransformerImpl::embed), resampled to the input's patch grid.
class ViTEncoderImpl : public torch::nn::Module {
 public:
  explicit ViTEncoderImpl(const ViTSpec& spec);
  // [N,L,C] tokens with their position embeddings -> [N,L,C] after the blocks and encoder.ln.
  torch::Tensor forward(const torch::Tensor& tokens);

  torch::Tensor pos_embedding;  // [1, 1 + grid^2, C]
  std::vector<EncoderBlock> blocks;
  torch::nn::LayerNorm ln{nullptr};
};
TORCH_MODULE(ViTEncoder);

class VisionTransformerImpl : public ClassifierImpl {
 public:
  VisionTransformerImpl(const ViTSpec& spec, std::int64_t num_classes,
                        HeadKind head = HeadKind::kLinear, double dropout = 0.5);

  // [N,3,H,W] (H, W multiples of 16), normalised -> [N,768] the class token after encoder.ln.
  torch::Tensor features(const torch::Tensor& x) override;
  // Grad-CAM over the patch grid: the tokens entering the last block (as pytorch-grad-cam's ViT
  // recipe), the last block, encoder.ln and the head as the logits, the patch tokens as the map.
  CamSplit cam_split(const torch::Tensor& x) override;

  const ViTSpec& spec() const { return spec_; }
  ViTEncoder& encoder() { return encoder_; }

 protected:
  std::vector<std::vector<torch::nn::Module*>> body_groups() override;
  std::vector<torch::Tensor> loose_body_parameters() override;      // class token, pos_embedding
  torch::Tensor linear_head(const torch::Tensor& tokens) override;  // heads.head

 private:
  void init_weights();
  // [N,3,H,W] -> [N, 1 + h*w, C]: class token and patch tokens plus position embeddings.
  torch::Tensor embed(const torch::Tensor& x, std::int64_t* grid_h, std::int64_t* grid_w);

  ViTSpec spec_;
  torch::nn::Conv2d conv_proj_{nullptr};
  torch::Tensor class_token_;  // [1,1,C]
  ViTEncoder encoder_{nullptr};
  torch::nn::Sequential heads_{nullptr};  // linear head only: `heads.head`
};
TORCH_MODULE(VisionTransformer);

// ArchInfo::adapt for ViT: a weight file's `encoder.pos_embedding` with another square grid,
// resampled to `model_shape`'s; an undefined tensor for anything else.
torch::Tensor vit_adapt_tensor(const std::string& name, const torch::Tensor& file_tensor,
                               const torch::Tensor& model_tensor);

// The family's ONNX graph (vit_onnx.cpp): patch embedding, class token, the position embeddings
// at the export's fixed size (a dynamic size is refused), the blocks, the class token's row.
OnnxFamily vit_onnx();

// The registry row of vit_b_16 (torchvision's IMAGENET1K_V1 file).
std::vector<ArchInfo> vit_archs();

}  // namespace ltfit
