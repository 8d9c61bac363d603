// Swin Transformer (v1) Tiny in LibTorch with torchvision's exact module tree, as ClassifierImpl.
//
// The body is torchvision's `features`: features.0 the patch embedding (Conv2d 3->96, kernel and
// stride 4; Permute to [N,H,W,C]; LayerNorm), features.1/3/5/7 the stages of SwinTransformerBlocks
// (`norm1`, `attn` = ShiftedWindowAttention with `qkv`, `proj`, `relative_position_bias_table` and
// the buffer `relative_position_index`, `stochastic_depth`, `norm2`, `mlp` = Linear, GELU,
// Dropout, Linear, Dropout), blocks alternating shift 0 and window / 2, and features.2/4/6 the
// PatchMerging layers (`norm`, `reduction`). Then the top-level `norm` (LayerNorm) and, for the
// linear head, `head` (Linear). State dicts map one to one with torchvision's, the
// relative_position_index buffers included (torchvision registers them persistent, so its
// state_dict has them), and parameter counts equal torchvision's (28,288,354 with 1000 classes).
//
// Any input size torchvision accepts works: each attention pads its [H,W] map to multiples of the
// window, shifts (torch.roll) and masks across the shifted windows' seams exactly as
// torchvision's shifted_window_attention does (no shift along a side the window covers whole),
// and PatchMerging pads odd sides. Stochastic depth rises linearly from 0 to 0.2 over the twelve
// blocks (row mode, training only). Initialisation follows torchvision: truncated-normal (std
// 0.02) Linear weights with zero biases and bias tables, LibTorch's (= PyTorch's) default for the
// patch convolution, LayerNorm weight 1 and bias 0. The bias tables are exempt from weight decay
// (timm's no_weight_decay).
//
// fastai's cut body is `features` + `norm` (features() returns [N,768,h,w], NCHW); its layer
// groups: features.0-3 (patch embedding, stages 1-2, the merge between) | features.4-7 and norm
// (stages 3-4, the last merges, the final norm) | head. The split is ConvNeXt's, whose four-stage
// layout Swin-T shares: the high-resolution stages, which carry generic low-level features and
// take the smallest learning rates, against the deep stages (10 of the 12 blocks' parameters by
// count), which fine-tuning adapts most; the final norm shapes the map the head reads, so it
// goes with the deep group. Modules are not thread-safe; use one per thread or guard calls.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include "ltfit/config/config.h"  // HeadKind
#include "ltfit/model/arch_registry.h"
#include "ltfit/model/classifier.h"
#include "ltfit/model/efficientnet.h"  // StochasticDepth

namespace ltfit {

// The size-specific shape of a Swin Transformer (torchvision's swin_t arguments).
struct SwinSpec {
  std::string arch;                  // swin_t
  std::int64_t patch = 4;            // patch embedding kernel and stride
  std::int64_t embed_dim = 96;       // channels of stage 1; doubled by each merge
  std::vector<int> depths;           // blocks per stage, {2, 2, 6, 2}
  std::vector<std::int64_t> heads;   // attention heads per stage, {3, 6, 12, 24}
  std::int64_t window = 7;           // square window side
  double stochastic_depth_prob = 0;  // drop probability of the deepest block
  // embed_dim * 2^(stages - 1): 768 for swin_t.
  std::int64_t feature_channels() const;
};

// Looks up `arch`; throws ConfigError for an unknown name, listing the known ones.
SwinSpec swin_spec(const std::string& arch);

// The shift torchvision applies along a side of `padded` length: none when the window covers the
// whole side, else `shift`.
std::int64_t swin_effective_shift(std::int64_t window, std::int64_t shift, std::int64_t padded);

// torchvision's shifted-window attention mask for a [padded_h, padded_w] map (window multiples)
// shifted by (shift_h, shift_w), at least one of them positive: [windows, window², window²]
// float32, 0 between tokens of the same region and -100 across regions.
torch::Tensor swin_attention_mask(std::int64_t padded_h, std::int64_t padded_w, std::int64_t window,
                                  std::int64_t shift_h, std::int64_t shift_w);

// torchvision's relative_position_index for a square window: [window^4] int64, entry (i, j) of
// the flattened [window², window²] indexes the bias table row of token j relative to token i.
torch::Tensor swin_relative_position_index(std::int64_t window);

// torchvision's ShiftedWindowAttention (v1): window multi-head self-attention with a learned
// relative position bias, the windows shifted by `shift` (0 for regular windows).
class ShiftedWindowAttentionImpl : public torch::nn::Module {
 public:
  ShiftedWindowAttentionImpl(std::int64_t dim, std::int64_t window, std::int64_t shift,
                             std::int64_t heads);
  torch::Tensor forward(const torch::Tensor& x);  // [N,H,W,C] -> [N,H,W,C]
  // The table gathered by the index: [1, heads, window², window²].
  torch::Tensor relative_position_bias() const;

  std::int64_t window() const { return window_; }
  std::int64_t shift() const { return shift_; }
  std::int64_t heads() const { return heads_; }

  torch::nn::Linear qkv{nullptr}, proj{nullptr};
  torch::Tensor relative_position_bias_table;  // [(2 window - 1)², heads]
  torch::Tensor relative_position_index;       // [window^4] int64 buffer

 private:
  std::int64_t window_, shift_, heads_;
};
TORCH_MODULE(ShiftedWindowAttention);

// torchvision's SwinTransformerBlock: x + sd(attn(norm1(x))), then x + sd(mlp(norm2(x))).
class SwinTransformerBlockImpl : public torch::nn::Module {
 public:
  // `drop_prob`: this block's stochastic-depth probability (active in training only).
  SwinTransformerBlockImpl(std::int64_t dim, std::int64_t heads, std::int64_t window,
                           std::int64_t shift, double drop_prob);
  torch::Tensor forward(const torch::Tensor& x);  // [N,H,W,C] -> [N,H,W,C]

  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  ShiftedWindowAttention attn{nullptr};
  StochasticDepth stochastic_depth{nullptr};
  torch::nn::Sequential mlp{nullptr};  // Linear(C, 4C), GELU, Dropout, Linear(4C, C), Dropout
};
TORCH_MODULE(SwinTransformerBlock);

// torchvision's PatchMerging: odd sides padded, each 2x2 neighbourhood concatenated (x0 x1 x2 x3
// order), LayerNorm(4C), Linear(4C, 2C) without bias.
class PatchMergingImpl : public torch::nn::Module {
 public:
  explicit PatchMergingImpl(std::int64_t dim);
  torch::Tensor forward(const torch::Tensor& x);  // [N,H,W,C] -> [N,ceil(H/2),ceil(W/2),2C]

  torch::nn::Linear reduction{nullptr};
  torch::nn::LayerNorm norm{nullptr};
};
TORCH_MODULE(PatchMerging);

class SwinTransformerImpl : public ClassifierImpl {
 public:
  SwinTransformerImpl(const SwinSpec& spec, std::int64_t num_classes,
                      HeadKind head = HeadKind::kLinear, double dropout = 0.5);

  // [N,3,H,W] float, ImageNet-normalised -> [N,768,h,w], h = ceil(floor(H/4) / 8) (H/32 for
  // multiples of 32; each merge halves rounding up): `features`, `norm`, permuted to NCHW.
  torch::Tensor features(const torch::Tensor& x) override;

  const SwinSpec& spec() const { return spec_; }

 protected:
  // features.0-3 | features.4-7, norm (see the file comment).
  std::vector<std::vector<torch::nn::Module*>> body_groups() override;
  // [N,768,h,w] -> avgpool -> flatten -> head -> [N,num_classes].
  torch::Tensor linear_head(const torch::Tensor& maps) override;

 private:
  void build_features();
  void init_weights();

  SwinSpec spec_;
  // `features`: the patch embedding, the four stages and the three PatchMerging layers, in
  // torchvision's order (the nested Sequentials are callable subclasses, swin.cpp).
  torch::nn::Sequential features_{nullptr};
  torch::nn::LayerNorm norm_{nullptr};
  torch::nn::Linear head_linear_{nullptr};  // `head`, linear head only
};
TORCH_MODULE(SwinTransformer);

// The family's ONNX graph (swin_onnx.cpp) for the export's fixed input size: padding, the cyclic
// shift (Slice + Concat), window partition (Reshape, Transpose) and the mask as constants of that
// size; stochastic depth and Dropout gone. A dynamic-size export is refused (ConfigError).
OnnxFamily swin_onnx();

// The registry row of the family: swin_t (torchvision's Swin_T_Weights.IMAGENET1K_V1).
std::vector<ArchInfo> swin_archs();

}  // namespace ltfit
