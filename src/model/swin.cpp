// Swin-T: shifted-window attention (padding, cyclic shift, mask, relative position bias), the
// block, PatchMerging, the body under torchvision's names, its head, torchvision's initialisation
// and the registry row. See swin.h.
#include "ltfit/model/swin.h"

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/linear.h>
#include <torch/nn/functional/padding.h>
#include <torch/nn/functional/pooling.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/functional.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/options/conv.h>

#include <cmath>
#include <functional>
#include <numeric>

#include "ltfit/model/weight_init.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace F = torch::nn::functional;
using torch::indexing::None;
using torch::indexing::Slice;

namespace {

constexpr double kSwinInitStd = 0.02;
constexpr double kSwinMaskValue = -100.0;  // torchvision's fill across regions

// A Sequential that can sit inside another (LibTorch's AnyModule needs a non-template forward):
// the patch embedding and the stages, children named 0, 1, ...
class SwinSequentialImpl : public torch::nn::SequentialImpl {
 public:
  using torch::nn::SequentialImpl::SequentialImpl;
  torch::Tensor forward(const torch::Tensor& x) { return SequentialImpl::forward(x); }
};
TORCH_MODULE(SwinSequential);

// torchvision's Permute([0, 2, 3, 1]): [N,C,H,W] -> [N,H,W,C] (a view).
torch::nn::Functional swin_to_channels_last() {
  return torch::nn::Functional(std::function<torch::Tensor(torch::Tensor)>([](torch::Tensor x) {
    return x.permute({0, 2, 3, 1});
  }));
}

torch::nn::LayerNorm swin_layer_norm(std::int64_t dim) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim}).eps(1e-5));
}

}  // namespace

std::int64_t SwinSpec::feature_channels() const {
  return embed_dim << (static_cast<std::int64_t>(depths.size()) - 1);
}

SwinSpec swin_spec(const std::string& arch) {
  if (arch == "swin_t") return {arch, 4, 96, {2, 2, 6, 2}, {3, 6, 12, 24}, 7, 0.2};
  throw ConfigError("model.arch: expected swin_t, got '" + arch + "'");
}

std::int64_t swin_effective_shift(std::int64_t window, std::int64_t shift, std::int64_t padded) {
  return window >= padded ? 0 : shift;
}

torch::Tensor swin_attention_mask(std::int64_t padded_h, std::int64_t padded_w, std::int64_t window,
                                  std::int64_t shift_h, std::int64_t shift_w) {
  // torchvision's slices, Python's semantics kept: with shift 0 along a side, (-window, -0) is
  // empty and (-0, None) the whole side, so that side has a single region.
  torch::Tensor mask = torch::zeros({padded_h, padded_w});
  const Slice h_slices[] = {Slice(0, -window), Slice(-window, -shift_h), Slice(-shift_h, None)};
  const Slice w_slices[] = {Slice(0, -window), Slice(-window, -shift_w), Slice(-shift_w, None)};
  int count = 0;
  for (const auto& h : h_slices) {
    for (const auto& w : w_slices) mask.index_put_({h, w}, count++);
  }
  const std::int64_t windows = (padded_h / window) * (padded_w / window);
  mask = mask.view({padded_h / window, window, padded_w / window, window})
             .permute({0, 2, 1, 3})
             .reshape({windows, window * window});
  mask = mask.unsqueeze(1) - mask.unsqueeze(2);  // [windows, L, L]
  return torch::where(mask != 0, torch::full({}, kSwinMaskValue), torch::zeros({}));
}

torch::Tensor swin_relative_position_index(std::int64_t window) {
  const std::int64_t tokens = window * window;
  torch::Tensor index = torch::empty({tokens * tokens}, torch::kLong);
  auto out = index.accessor<std::int64_t, 1>();
  for (std::int64_t i = 0; i < tokens; ++i) {
    for (std::int64_t j = 0; j < tokens; ++j) {
      const std::int64_t dh = i / window - j / window + window - 1;
      const std::int64_t dw = i % window - j % window + window - 1;
      out[i * tokens + j] = dh * (2 * window - 1) + dw;
    }
  }
  return index;
}

ShiftedWindowAttentionImpl::ShiftedWindowAttentionImpl(std::int64_t dim, std::int64_t window,
                                                       std::int64_t shift, std::int64_t heads)
    : window_(window), shift_(shift), heads_(heads) {
  LTFIT_CHECK(heads > 0 && dim % heads == 0, "attention heads must divide the channels");
  LTFIT_CHECK(window > 0 && shift >= 0 && shift < window, "a shift lies within the window");
  qkv = register_module("qkv", torch::nn::Linear(dim, 3 * dim));
  proj = register_module("proj", torch::nn::Linear(dim, dim));
  relative_position_bias_table = register_parameter(
      "relative_position_bias_table", torch::zeros({(2 * window - 1) * (2 * window - 1), heads}));
  {
    torch::NoGradGuard no_grad;
    trunc_normal_init(relative_position_bias_table, kSwinInitStd);
  }
  relative_position_index =
      register_buffer("relative_position_index", swin_relative_position_index(window));
}

torch::Tensor ShiftedWindowAttentionImpl::relative_position_bias() const {
  const std::int64_t tokens = window_ * window_;
  return relative_position_bias_table
      .index({relative_position_index})  // [L*L, heads]
      .view({tokens, tokens, -1})
      .permute({2, 0, 1})
      .contiguous()
      .unsqueeze(0);  // [1, heads, L, L]
}

// torchvision's shifted_window_attention, step for step (the same operations in the same order,
// so float32 results agree to rounding).
torch::Tensor ShiftedWindowAttentionImpl::forward(const torch::Tensor& input) {
  const std::int64_t n = input.size(0), h = input.size(1), w = input.size(2), c = input.size(3);
  const std::int64_t ws = window_;
  const std::int64_t pad_r = (ws - w % ws) % ws, pad_b = (ws - h % ws) % ws;
  torch::Tensor x = F::pad(input, F::PadFuncOptions({0, 0, 0, pad_r, 0, pad_b}));
  const std::int64_t ph = h + pad_b, pw = w + pad_r;
  const std::int64_t sh = swin_effective_shift(ws, shift_, ph);
  const std::int64_t sw = swin_effective_shift(ws, shift_, pw);
  const bool shifted = sh + sw > 0;
  if (shifted) x = torch::roll(x, {-sh, -sw}, {1, 2});
  // [N,pH,pW,C] -> [N*windows, L, C]
  const std::int64_t windows = (ph / ws) * (pw / ws), tokens = ws * ws;
  x = x.view({n, ph / ws, ws, pw / ws, ws, c})
          .permute({0, 1, 3, 2, 4, 5})
          .reshape({n * windows, tokens, c});
  const torch::Tensor qkv_out = F::linear(x, qkv->weight, qkv->bias)
                                    .reshape({x.size(0), x.size(1), 3, heads_, c / heads_})
                                    .permute({2, 0, 3, 1, 4});  // [3, N*windows, heads, L, d]
  const torch::Tensor q = qkv_out[0] * std::pow(static_cast<double>(c / heads_), -0.5);
  torch::Tensor attn = q.matmul(qkv_out[1].transpose(-2, -1)) + relative_position_bias();
  if (shifted) {
    const torch::Tensor mask = swin_attention_mask(ph, pw, ws, sh, sw).to(attn.options());
    attn = attn.view({n, windows, heads_, tokens, tokens}) + mask.unsqueeze(1).unsqueeze(0);
    attn = attn.view({-1, heads_, tokens, tokens});
  }
  attn = torch::softmax(attn, -1);  // attention dropout: torchvision's swin_t has p = 0
  x = attn.matmul(qkv_out[2]).transpose(1, 2).reshape({x.size(0), x.size(1), c});
  x = F::linear(x, proj->weight, proj->bias);
  // [N*windows, L, C] -> [N,pH,pW,C], shifted back, cropped to [N,H,W,C]
  x = x.view({n, ph / ws, pw / ws, ws, ws, c}).permute({0, 1, 3, 2, 4, 5}).reshape({n, ph, pw, c});
  if (shifted) x = torch::roll(x, {sh, sw}, {1, 2});
  return x.index({Slice(), Slice(None, h), Slice(None, w), Slice()}).contiguous();
}

SwinTransformerBlockImpl::SwinTransformerBlockImpl(std::int64_t dim, std::int64_t heads,
                                                   std::int64_t window, std::int64_t shift,
                                                   double drop_prob) {
  norm1 = register_module("norm1", swin_layer_norm(dim));
  attn = register_module("attn", ShiftedWindowAttention(dim, window, shift, heads));
  stochastic_depth = register_module("stochastic_depth", StochasticDepth(drop_prob));
  norm2 = register_module("norm2", swin_layer_norm(dim));
  mlp = register_module(
      "mlp", torch::nn::Sequential(torch::nn::Linear(dim, 4 * dim), torch::nn::GELU(),
                                   torch::nn::Dropout(0.0), torch::nn::Linear(4 * dim, dim),
                                   torch::nn::Dropout(0.0)));
}

torch::Tensor SwinTransformerBlockImpl::forward(const torch::Tensor& x) {
  torch::Tensor out = x + stochastic_depth(attn(norm1(x)));
  return out + stochastic_depth(mlp->forward(norm2(out)));
}

PatchMergingImpl::PatchMergingImpl(std::int64_t dim) {
  reduction = register_module(
      "reduction", torch::nn::Linear(torch::nn::LinearOptions(4 * dim, 2 * dim).bias(false)));
  norm = register_module("norm", swin_layer_norm(4 * dim));
}

torch::Tensor PatchMergingImpl::forward(const torch::Tensor& input) {
  const std::int64_t h = input.size(-3), w = input.size(-2);
  const torch::Tensor x = F::pad(input, F::PadFuncOptions({0, 0, 0, w % 2, 0, h % 2}));
  const Slice even(0, None, 2), odd(1, None, 2);
  const torch::Tensor merged =
      torch::cat({x.index({"...", even, even, Slice()}), x.index({"...", odd, even, Slice()}),
                  x.index({"...", even, odd, Slice()}), x.index({"...", odd, odd, Slice()})},
                 -1);  // [N,H/2,W/2,4C]
  return reduction(norm(merged));
}

SwinTransformerImpl::SwinTransformerImpl(const SwinSpec& spec, std::int64_t num_classes,
                                         HeadKind head, double dropout)
    : ClassifierImpl(spec.arch, spec.feature_channels()), spec_(spec) {
  LTFIT_CHECK(spec.depths.size() == spec.heads.size() && !spec.depths.empty(),
              "a Swin Transformer has one head count per stage");
  LTFIT_CHECK(num_classes > 0, "num_classes must be positive");
  build_features();
  norm_ = register_module("norm", swin_layer_norm(feature_channels()));
  if (head == HeadKind::kLinear) {
    head_linear_ = register_module("head", torch::nn::Linear(feature_channels(), num_classes));
  }
  init_weights();  // before the fastai head, which initialises itself as fastai does
  if (head != HeadKind::kLinear) add_fastai_head(num_classes, dropout);
}

// features.0 patch embedding; features.1/3/5/7 stages; features.2/4/6 PatchMerging.
void SwinTransformerImpl::build_features() {
  const int total_blocks = std::accumulate(spec_.depths.begin(), spec_.depths.end(), 0);
  LTFIT_CHECK(total_blocks > 1, "a Swin Transformer has more than one block");
  features_ = torch::nn::Sequential();
  features_->push_back(SwinSequential(
      torch::nn::Conv2d(
          torch::nn::Conv2dOptions(3, spec_.embed_dim, spec_.patch).stride(spec_.patch)),
      swin_to_channels_last(), swin_layer_norm(spec_.embed_dim)));
  int block_id = 0;
  for (std::size_t s = 0; s < spec_.depths.size(); ++s) {
    const std::int64_t dim = spec_.embed_dim << s;
    SwinSequential stage;
    for (int i = 0; i < spec_.depths[s]; ++i, ++block_id) {
      const double p = spec_.stochastic_depth_prob * block_id / (total_blocks - 1.0);
      SwinTransformerBlock block(dim, spec_.heads[s], spec_.window,
                                 i % 2 == 0 ? 0 : spec_.window / 2, p);
      mark_no_weight_decay(block->attn->relative_position_bias_table);
      stage->push_back(block);
    }
    features_->push_back(stage);
    if (s + 1 < spec_.depths.size()) features_->push_back(PatchMerging(dim));
  }
  features_ = register_module("features", features_);
}

void SwinTransformerImpl::init_weights() {
  torch::NoGradGuard no_grad;
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* linear = module->as<torch::nn::Linear>()) {
      trunc_normal_init(linear->weight, kSwinInitStd);
      if (linear->bias.defined()) linear->bias.zero_();
    }
  }
}

torch::Tensor SwinTransformerImpl::features(const torch::Tensor& x) {
  // [N,3,H,W] -> [N,h,w,768] -> norm -> [N,768,h,w]
  return norm_(features_->forward(x)).permute({0, 3, 1, 2});
}

std::vector<std::vector<torch::nn::Module*>> SwinTransformerImpl::body_groups() {
  LTFIT_CHECK(features_->size() == 8, "a Swin-T body has eight parts");
  std::vector<std::vector<torch::nn::Module*>> groups(2);
  for (std::size_t i = 0; i < features_->size(); ++i) {
    groups[i < 4 ? 0 : 1].push_back(features_->ptr(i).get());
  }
  groups[1].push_back(norm_.get());
  return groups;
}

torch::Tensor SwinTransformerImpl::linear_head(const torch::Tensor& maps) {
  LTFIT_CHECK(!head_linear_.is_empty(), "linear_head needs torchvision's head");
  // [N,768,h,w] -> [N,768,1,1] -> [N,768] -> [N,num_classes]
  return head_linear_(F::adaptive_avg_pool2d(maps, F::AdaptiveAvgPool2dFuncOptions(1)).flatten(1));
}

std::vector<ArchInfo> swin_archs() {
  // torchvision 0.29's Swin_T_Weights.IMAGENET1K_V1: url, transforms (resize 232 bicubic, crop
  // 224, ImageNet mean/std), meta num_params and acc@1.
  const SwinSpec spec = swin_spec("swin_t");
  ArchInfo info;
  info.name = spec.arch;
  info.family = "swin";
  info.make = family_constructor<SwinTransformerImpl>(spec);
  info.weights_file = "swin_t-704ceda3.pth";
  info.normalization = ImageNormalization{};
  info.interpolation = "bicubic";
  info.eval_resize = 232;
  info.eval_crop = 224;
  info.classifier_prefix = "head.";
  info.feature_channels = spec.feature_channels();
  info.parameters = 28288354;
  info.imagenet_top1 = 81.474;
  info.layer_groups = "features.0-3 / features.4-7, norm / head";
  info.onnx = swin_onnx();
  return {info};
}

}  // namespace ltfit
