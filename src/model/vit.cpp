// ViT-B/16: torchvision's VisionTransformer module tree and initialisation, timm's position
// embedding resampling, fastai's layer groups and the registry row. See vit.h.
#include "ltfit/model/vit.h"

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/upsampling.h>
#include <torch/nn/init.h>
#include <torch/nn/modules/activation.h>

#include <cmath>

#include "ltfit/model/weight_init.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace F = torch::nn::functional;

namespace {

constexpr double kVitLayerNormEps = 1e-6;
constexpr double kPosEmbeddingStd = 0.02;
constexpr double kMlpBiasStd = 1e-6;

torch::nn::LayerNorm vit_layer_norm(std::int64_t dim) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim}).eps(kVitLayerNormEps));
}

}  // namespace

ViTSpec vit_spec(const std::string& arch) {
  if (arch == "vit_b_16") return ViTSpec{arch};
  throw ConfigError("model.arch: expected vit_b_16, got '" + arch + "'");
}

torch::Tensor resample_position_embedding(const torch::Tensor& pos, std::int64_t grid_h,
                                          std::int64_t grid_w, std::int64_t prefix) {
  LTFIT_CHECK(pos.dim() == 3 && pos.size(0) == 1 && pos.size(1) > prefix,
              "position embeddings are [1, prefix + h*w, C]");
  const std::int64_t tokens = pos.size(1) - prefix;
  const auto side = static_cast<std::int64_t>(std::llround(std::sqrt(static_cast<double>(tokens))));
  LTFIT_CHECK(side * side == tokens, "position embeddings cover a square grid");
  if (side == grid_h && side == grid_w) return pos;
  const std::int64_t dim = pos.size(2);
  const torch::Tensor grid = pos.narrow(1, prefix, tokens)
                                 .to(torch::kFloat32)
                                 .reshape({1, side, side, dim})
                                 .permute({0, 3, 1, 2});  // [1,C,side,side]
  const torch::Tensor resized =
      F::interpolate(grid, F::InterpolateFuncOptions()
                               .size(std::vector<std::int64_t>{grid_h, grid_w})
                               .mode(torch::kBicubic)
                               .align_corners(false)
                               .antialias(true));
  const torch::Tensor flat =
      resized.permute({0, 2, 3, 1}).reshape({1, grid_h * grid_w, dim}).to(pos.scalar_type());
  return torch::cat({pos.narrow(1, 0, prefix), flat}, 1);
}

SelfAttentionImpl::SelfAttentionImpl(std::int64_t dim, std::int64_t heads) : heads_(heads) {
  LTFIT_CHECK(dim % heads == 0, "attention width divisible by the heads");
  in_proj_weight = register_parameter("in_proj_weight", torch::empty({3 * dim, dim}));
  in_proj_bias = register_parameter("in_proj_bias", torch::zeros({3 * dim}));
  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));
  torch::NoGradGuard no_grad;  // torch.nn.MultiheadAttention._reset_parameters
  torch::nn::init::xavier_uniform_(in_proj_weight);
  out_proj->bias.zero_();
}

torch::Tensor SelfAttentionImpl::forward(const torch::Tensor& x) {
  const std::int64_t n = x.size(0), len = x.size(1), dim = x.size(2);
  const torch::Tensor qkv = F::linear(x, in_proj_weight, in_proj_bias)
                                .reshape({n, len, 3, heads_, dim / heads_})
                                .permute({2, 0, 3, 1, 4});  // [3,N,heads,L,D]
  const torch::Tensor attended =
      at::scaled_dot_product_attention(qkv[0], qkv[1], qkv[2]);  // [N,heads,L,D]
  return out_proj(attended.transpose(1, 2).reshape({n, len, dim}));
}

EncoderBlockImpl::EncoderBlockImpl(const ViTSpec& spec, double drop_path) {
  ln_1 = register_module("ln_1", vit_layer_norm(spec.hidden));
  self_attention = register_module("self_attention", SelfAttention(spec.hidden, spec.heads));
  ln_2 = register_module("ln_2", vit_layer_norm(spec.hidden));
  mlp = register_module("mlp", torch::nn::Sequential(torch::nn::Linear(spec.hidden, spec.mlp),
                                                     torch::nn::GELU(), torch::nn::Dropout(0.0),
                                                     torch::nn::Linear(spec.mlp, spec.hidden),
                                                     torch::nn::Dropout(0.0)));
  drop_path_ = register_module("drop_path", StochasticDepth(drop_path));
  torch::NoGradGuard no_grad;  // torchvision's MLPBlock
  for (std::size_t i : {0, 3}) {
    auto* linear = mlp->ptr(i)->as<torch::nn::Linear>();
    torch::nn::init::xavier_uniform_(linear->weight);
    linear->bias.normal_(0.0, kMlpBiasStd);
  }
}

torch::Tensor EncoderBlockImpl::forward(const torch::Tensor& input) {
  const torch::Tensor x = input + drop_path_(self_attention(ln_1(input)));
  return x + drop_path_(mlp->forward(ln_2(x)));
}

ViTEncoderImpl::ViTEncoderImpl(const ViTSpec& spec) {
  const std::int64_t tokens = 1 + spec.grid() * spec.grid();
  pos_embedding = register_parameter(
      "pos_embedding", torch::empty({1, tokens, spec.hidden}).normal_(0.0, kPosEmbeddingStd));
  auto layers = std::make_shared<torch::nn::Module>();
  for (int i = 0; i < spec.layers; ++i) {
    const double p =
        spec.layers > 1 ? spec.stochastic_depth_prob * i / (spec.layers - 1) : 0.0;  // linspace
    blocks.push_back(
        layers->register_module("encoder_layer_" + std::to_string(i), EncoderBlock(spec, p)));
  }
  register_module("layers", layers);
  ln = register_module("ln", vit_layer_norm(spec.hidden));
}

torch::Tensor ViTEncoderImpl::forward(const torch::Tensor& tokens) {
  torch::Tensor x = tokens;
  for (auto& block : blocks) x = block(x);
  return ln(x);
}

VisionTransformerImpl::VisionTransformerImpl(const ViTSpec& spec, std::int64_t num_classes,
                                             HeadKind head, double dropout)
    : ClassifierImpl(spec.arch, spec.hidden, FeatureLayout::kToken), spec_(spec) {
  LTFIT_CHECK(num_classes > 0, "num_classes must be positive");
  conv_proj_ = register_module(
      "conv_proj",
      torch::nn::Conv2d(torch::nn::Conv2dOptions(3, spec.hidden, spec.patch).stride(spec.patch)));
  class_token_ = register_parameter("class_token", torch::zeros({1, 1, spec.hidden}));
  encoder_ = register_module("encoder", ViTEncoder(spec));
  if (head == HeadKind::kLinear) {
    heads_ = torch::nn::Sequential();
    heads_->push_back("head", torch::nn::Linear(spec.hidden, num_classes));
    heads_ = register_module("heads", heads_);
  }
  init_weights();
  mark_no_weight_decay(class_token_);  // timm: no_weight_decay() = {pos_embed, cls_token}
  mark_no_weight_decay(encoder_->pos_embedding);
  if (head != HeadKind::kLinear) add_fastai_head(num_classes, dropout);
}

void VisionTransformerImpl::init_weights() {
  torch::NoGradGuard no_grad;
  const double fan_in = 3.0 * static_cast<double>(spec_.patch * spec_.patch);
  trunc_normal_init(conv_proj_->weight, std::sqrt(1.0 / fan_in));
  conv_proj_->bias.zero_();
  if (!heads_.is_empty()) {
    auto* linear = heads_->ptr(0)->as<torch::nn::Linear>();
    linear->weight.zero_();
    linear->bias.zero_();
  }
}

torch::Tensor VisionTransformerImpl::embed(const torch::Tensor& x, std::int64_t* grid_h,
                                           std::int64_t* grid_w) {
  if (x.dim() != 4 || x.size(2) % spec_.patch != 0 || x.size(3) % spec_.patch != 0) {
    throw ConfigError(spec_.arch + ": an input of " + std::to_string(x.size(-2)) + "x" +
                          std::to_string(x.size(-1)) + " pixels is not a whole number of " +
                          std::to_string(spec_.patch) + "-pixel patches",
                      "use a data.image_size (and eval size) that is a multiple of " +
                          std::to_string(spec_.patch));
  }
  const torch::Tensor patches = conv_proj_(x);  // [N,C,h,w]
  const std::int64_t n = patches.size(0);
  *grid_h = patches.size(2);
  *grid_w = patches.size(3);
  const torch::Tensor tokens = torch::cat(
      {class_token_.expand({n, 1, spec_.hidden}), patches.flatten(2).transpose(1, 2)}, 1);
  return tokens + resample_position_embedding(encoder_->pos_embedding, *grid_h, *grid_w);
}

torch::Tensor VisionTransformerImpl::features(const torch::Tensor& x) {
  std::int64_t grid_h = 0, grid_w = 0;
  return encoder_->forward(embed(x, &grid_h, &grid_w)).select(1, 0);  // [N,C]
}

CamSplit VisionTransformerImpl::cam_split(const torch::Tensor& x) {
  std::int64_t grid_h = 0, grid_w = 0;
  torch::Tensor tokens = embed(x, &grid_h, &grid_w);
  const std::size_t last = encoder_->blocks.size() - 1;
  for (std::size_t i = 0; i < last; ++i) tokens = encoder_->blocks[i](tokens);
  EncoderBlock block = encoder_->blocks[last];
  const std::int64_t channels = spec_.hidden;
  return {tokens,
          [this, block](const torch::Tensor& t) mutable {
            return classify(encoder_->ln(block(t)).select(1, 0));
          },
          [grid_h, grid_w, channels](const torch::Tensor& t) {  // [N,1+h*w,C] -> [N,C,h,w]
            return t.narrow(1, 1, grid_h * grid_w)
                .transpose(1, 2)
                .reshape({t.size(0), channels, grid_h, grid_w});
          }};
}

std::vector<std::vector<torch::nn::Module*>> VisionTransformerImpl::body_groups() {
  std::vector<std::vector<torch::nn::Module*>> groups(2);
  groups[0].push_back(conv_proj_.get());
  const std::size_t half = encoder_->blocks.size() / 2;
  for (std::size_t i = 0; i < encoder_->blocks.size(); ++i) {
    groups[i < half ? 0 : 1].push_back(encoder_->blocks[i].get());
  }
  groups[1].push_back(encoder_->ln.get());
  return groups;
}

std::vector<torch::Tensor> VisionTransformerImpl::loose_body_parameters() {
  return {class_token_, encoder_->pos_embedding};
}

torch::Tensor VisionTransformerImpl::linear_head(const torch::Tensor& tokens) {
  LTFIT_CHECK(!heads_.is_empty(), "the linear head was not built");
  return heads_->forward(tokens);  // [N,C] -> [N,num_classes]
}

torch::Tensor vit_adapt_tensor(const std::string& name, const torch::Tensor& file_tensor,
                               const torch::Tensor& model_tensor) {
  if (name != "encoder.pos_embedding" || file_tensor.dim() != 3 || model_tensor.dim() != 3 ||
      file_tensor.size(0) != 1 || file_tensor.size(2) != model_tensor.size(2)) {
    return {};
  }
  const std::int64_t file_tokens = file_tensor.size(1) - 1;
  const auto side =
      static_cast<std::int64_t>(std::llround(std::sqrt(static_cast<double>(file_tokens))));
  if (file_tokens < 1 || side * side != file_tokens) return {};
  const auto grid = static_cast<std::int64_t>(
      std::llround(std::sqrt(static_cast<double>(model_tensor.size(1) - 1))));
  return resample_position_embedding(file_tensor, grid, grid);
}

std::vector<ArchInfo> vit_archs() {
  const ViTSpec spec = vit_spec("vit_b_16");
  ArchInfo info;
  info.name = spec.arch;
  info.family = "vit";
  info.make = family_constructor<VisionTransformerImpl>(spec);
  info.weights_file = "vit_b_16-c867db91.pth";  // torchvision 0.29's ViT_B_16_Weights.IMAGENET1K_V1
  info.normalization = ImageNormalization{};
  info.interpolation = "bilinear";
  info.eval_resize = 256;
  info.eval_crop = 224;
  info.classifier_prefix = "heads.";
  info.feature_channels = spec.hidden;
  info.feature_layout = FeatureLayout::kToken;
  info.parameters = 86567656;
  info.imagenet_top1 = 81.072;
  info.layer_groups = "conv_proj, class token, pos_embedding, blocks 0-5 / blocks 6-11, ln / head";
  info.adapt = vit_adapt_tensor;
  info.onnx = vit_onnx();
  return {std::move(info)};
}

}  // namespace ltfit
