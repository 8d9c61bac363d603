// EfficientNet-B0..B3: torchvision's MBConv table scaled per variant, the module tree under
// torchvision's names, its initialisation, fastai's layer groups and the registry rows. See
// efficientnet.h.
#include "ltfit/model/efficientnet.h"

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/pooling.h>
#include <torch/nn/init.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/options/conv.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <memory>

#include "ltfit/model/batch_norm_fold.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace F = torch::nn::functional;

namespace {

// One row of torchvision's EfficientNet-B0 table (before width/depth scaling).
struct StageConfig {
  double expand_ratio;
  std::int64_t kernel;
  std::int64_t stride;
  std::int64_t in_channels;
  std::int64_t out_channels;
  int layers;
};

constexpr StageConfig kB0Stages[] = {
    {1, 3, 1, 32, 16, 1},  {6, 3, 2, 16, 24, 2},   {6, 5, 2, 24, 40, 2},   {6, 3, 2, 40, 80, 3},
    {6, 5, 1, 80, 112, 3}, {6, 5, 2, 112, 192, 4}, {6, 3, 1, 192, 320, 1},
};

// torchvision's efficientnet_bN builders (constant-initialised: safe in static initialisers).
struct Variant {
  const char* arch;
  double width_mult;
  double depth_mult;
  double dropout;
};

constexpr Variant kVariants[] = {
    {"efficientnet_b0", 1.0, 1.0, 0.2},
    {"efficientnet_b1", 1.0, 1.1, 0.2},
    {"efficientnet_b2", 1.1, 1.2, 0.3},
    {"efficientnet_b3", 1.2, 1.4, 0.3},
};

// A Sequential that can sit inside another (LibTorch's AnyModule needs a non-template forward):
// torchvision's Conv2dNormActivation and the MBConv stages, children named 0, 1, ...
class NestedSequentialImpl : public torch::nn::SequentialImpl {
 public:
  using torch::nn::SequentialImpl::SequentialImpl;
  torch::Tensor forward(const torch::Tensor& x) { return SequentialImpl::forward(x); }
};
TORCH_MODULE(NestedSequential);

int scaled_depth(int layers, double depth_mult) {
  return static_cast<int>(std::ceil(layers * depth_mult));
}

// torchvision's Conv2dNormActivation: conv (no bias, "same" padding) [N,in,H,W] -> BatchNorm ->
// SiLU (when `activation`) -> [N,out,H/stride,W/stride]; children named 0, 1, 2.
ConvNormAct conv_norm_activation(std::int64_t in, std::int64_t out, std::int64_t kernel,
                                 std::int64_t stride, std::int64_t groups, bool activation) {
  ConvNormAct layers(torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                                           .stride(stride)
                                           .padding((kernel - 1) / 2)
                                           .groups(groups)
                                           .bias(false)),
                     torch::nn::BatchNorm2d(out));
  if (activation) layers->push_back(torch::nn::SiLU());
  return layers;
}

}  // namespace

std::int64_t EfficientNetSpec::feature_channels() const {
  return 4 * efficientnet_channels(kB0Stages[std::size(kB0Stages) - 1].out_channels, width_mult);
}

EfficientNetSpec efficientnet_spec(const std::string& arch) {
  std::string names;
  for (const auto& v : kVariants) {
    if (v.arch == arch) return {v.arch, v.width_mult, v.depth_mult, v.dropout, 0.2};
    names += (names.empty() ? "" : ", ") + std::string(v.arch);
  }
  throw ConfigError("model.arch: expected one of " + names + ", got '" + arch + "'");
}

std::int64_t efficientnet_channels(std::int64_t channels, double width_mult) {
  constexpr std::int64_t kDivisor = 8;
  const double v = static_cast<double>(channels) * width_mult;
  std::int64_t rounded =
      std::max(kDivisor, static_cast<std::int64_t>(v + kDivisor / 2.0) / kDivisor * kDivisor);
  if (static_cast<double>(rounded) < 0.9 * v) rounded += kDivisor;  // not down by more than 10%
  return rounded;
}

StochasticDepthImpl::StochasticDepthImpl(double p) : p_(p) {
  LTFIT_CHECK(p >= 0.0 && p <= 1.0, "stochastic depth probability must be in [0, 1]");
}

torch::Tensor StochasticDepthImpl::forward(const torch::Tensor& x) {
  if (!is_training() || p_ == 0.0) return x;
  const double survival = 1.0 - p_;
  std::vector<std::int64_t> size(static_cast<std::size_t>(x.dim()), 1);
  size[0] = x.size(0);
  torch::Tensor noise = torch::empty(size, x.options()).bernoulli_(survival);  // [N,1,1,1]
  if (survival > 0.0) noise.div_(survival);
  return x * noise;
}

SqueezeExcitationImpl::SqueezeExcitationImpl(std::int64_t channels, std::int64_t squeeze_channels,
                                             SqueezeActivations activations)
    : activations_(activations) {
  avgpool_ = register_module("avgpool", torch::nn::AdaptiveAvgPool2d(1));
  fc1_ = register_module(
      "fc1", torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, squeeze_channels, 1)));
  fc2_ = register_module(
      "fc2", torch::nn::Conv2d(torch::nn::Conv2dOptions(squeeze_channels, channels, 1)));
}

torch::Tensor SqueezeExcitationImpl::forward(const torch::Tensor& x) {
  torch::Tensor scale = fc1_(avgpool_(x));  // [N,S,1,1]
  scale = activations_ == SqueezeActivations::kSiluSigmoid ? F::silu(scale) : torch::relu(scale);
  scale = fc2_(scale);  // [N,C,1,1]
  scale = activations_ == SqueezeActivations::kReluHardsigmoid ? torch::hardsigmoid(scale)
                                                               : torch::sigmoid(scale);
  return scale * x;  // [N,C,H,W]
}

MBConvImpl::MBConvImpl(const MBConvOptions& options)
    : use_residual_(options.stride == 1 && options.in_channels == options.out_channels) {
  LTFIT_CHECK(options.stride == 1 || options.stride == 2, "MBConv stride must be 1 or 2");
  const std::int64_t in = options.in_channels;
  const std::int64_t expanded = efficientnet_channels(in, options.expand_ratio);
  block_ = torch::nn::Sequential();
  if (expanded != in) block_->push_back(conv_norm_activation(in, expanded, 1, 1, 1, true));
  block_->push_back(
      conv_norm_activation(expanded, expanded, options.kernel, options.stride, expanded, true));
  block_->push_back(SqueezeExcitation(expanded, std::max<std::int64_t>(1, in / 4)));
  block_->push_back(conv_norm_activation(expanded, options.out_channels, 1, 1, 1, false));
  block_ = register_module("block", block_);
  stochastic_depth_ =
      register_module("stochastic_depth", StochasticDepth(options.stochastic_depth_prob));
}

torch::Tensor MBConvImpl::forward(const torch::Tensor& x) {
  torch::Tensor result = block_->forward(x);
  if (use_residual_) result = stochastic_depth_(result) + x;
  return result;
}

EfficientNetImpl::EfficientNetImpl(const EfficientNetSpec& spec, std::int64_t num_classes,
                                   HeadKind head, double dropout)
    : ClassifierImpl(spec.arch, spec.feature_channels()), spec_(spec) {
  LTFIT_CHECK(num_classes > 0, "num_classes must be positive");
  build_features();
  if (head == HeadKind::kLinear) {
    classifier_ = register_module(
        "classifier", torch::nn::Sequential(
                          torch::nn::Dropout(torch::nn::DropoutOptions(spec.dropout).inplace(true)),
                          torch::nn::Linear(feature_channels(), num_classes)));
  }
  init_weights();  // before the fastai head, which initialises itself as fastai does
  if (head != HeadKind::kLinear) add_fastai_head(num_classes, dropout);
}

void EfficientNetImpl::build_features() {
  const double width = spec_.width_mult;
  int total_blocks = 0;
  for (const auto& stage : kB0Stages) total_blocks += scaled_depth(stage.layers, spec_.depth_mult);
  features_ = torch::nn::Sequential();
  const std::int64_t stem = efficientnet_channels(kB0Stages[0].in_channels, width);
  features_->push_back(conv_norm_activation(3, stem, 3, 2, 1, true));  // features.0
  int block_id = 0;
  for (const auto& stage : kB0Stages) {  // features.1 ... features.7
    NestedSequential blocks;
    MBConvOptions options{stage.expand_ratio, stage.kernel, stage.stride,
                          efficientnet_channels(stage.in_channels, width),
                          efficientnet_channels(stage.out_channels, width)};
    for (int i = 0; i < scaled_depth(stage.layers, spec_.depth_mult); ++i, ++block_id) {
      if (i > 0) {  // later blocks of a stage keep the shape
        options.in_channels = options.out_channels;
        options.stride = 1;
      }
      options.stochastic_depth_prob = spec_.stochastic_depth_prob * block_id / total_blocks;
      blocks->push_back(MBConv(options));
    }
    features_->push_back(blocks);
  }
  const std::int64_t last =
      efficientnet_channels(kB0Stages[std::size(kB0Stages) - 1].out_channels, width);
  LTFIT_CHECK(4 * last == feature_channels(), "features.8 widens to the feature channels");
  features_->push_back(conv_norm_activation(last, 4 * last, 1, 1, 1, true));  // features.8
  features_ = register_module("features", features_);
}

void EfficientNetImpl::init_weights() {
  torch::NoGradGuard no_grad;
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* conv = module->as<torch::nn::Conv2d>()) {
      // torchvision: kaiming_normal_(mode="fan_out"), leaky_relu with a = 0 (gain sqrt 2).
      torch::nn::init::kaiming_normal_(conv->weight, /*a=*/0.0, torch::kFanOut);
      if (conv->bias.defined()) conv->bias.zero_();
    } else if (auto* bn = module->as<torch::nn::BatchNorm2d>()) {
      bn->weight.fill_(1.0);
      bn->bias.zero_();
    } else if (auto* linear = module->as<torch::nn::Linear>()) {
      const double range = 1.0 / std::sqrt(static_cast<double>(linear->options.out_features()));
      linear->weight.uniform_(-range, range);
      linear->bias.zero_();
    }
  }
}

torch::Tensor EfficientNetImpl::features(const torch::Tensor& x) {
  return features_->forward(x);  // [N,3,H,W] -> [N,C,H/32,W/32]
}

std::vector<std::vector<torch::nn::Module*>> EfficientNetImpl::body_groups() {
  LTFIT_CHECK(features_->size() == 9, "features holds the stem, seven stages and the last conv");
  std::vector<std::vector<torch::nn::Module*>> groups(2);
  for (std::size_t i = 0; i < features_->size(); ++i) {
    groups[i < 4 ? 0 : 1].push_back(features_->ptr(i).get());
  }
  return groups;
}

torch::Tensor EfficientNetImpl::linear_head(const torch::Tensor& maps) {
  LTFIT_CHECK(!classifier_.is_empty(), "the linear head was not built");
  const torch::Tensor pooled =
      F::adaptive_avg_pool2d(maps, F::AdaptiveAvgPool2dFuncOptions(1)).flatten(1);  // [N,C]
  return classifier_->forward(pooled);  // [N,num_classes]
}

namespace {

struct PublishedWeights {
  const char* arch;
  const char* file;  // IMAGENET1K_V1
  int resize;
  int crop;
  std::int64_t parameters;
  double top1;
};

// torchvision 0.29's EfficientNet_B*_Weights.IMAGENET1K_V1 (bicubic, ImageNet mean/std).
constexpr PublishedWeights kWeights[] = {
    {"efficientnet_b0", "efficientnet_b0_rwightman-7f5810bc.pth", 256, 224, 5288548, 77.692},
    {"efficientnet_b1", "efficientnet_b1_rwightman-bac287d4.pth", 256, 240, 7794184, 78.642},
    {"efficientnet_b2", "efficientnet_b2_rwightman-c35c1473.pth", 288, 288, 9109994, 80.608},
    {"efficientnet_b3", "efficientnet_b3_rwightman-b3899882.pth", 320, 300, 12233232, 82.008},
};

}  // namespace

std::vector<ArchInfo> efficientnet_archs() {
  std::vector<ArchInfo> rows;
  for (const auto& w : kWeights) {
    const EfficientNetSpec spec = efficientnet_spec(w.arch);
    ArchInfo info;
    info.name = w.arch;
    info.family = "efficientnet";
    info.make = family_constructor<EfficientNetImpl>(spec);
    info.weights_file = w.file;
    info.normalization = ImageNormalization{};
    info.interpolation = "bicubic";
    info.eval_resize = w.resize;
    info.eval_crop = w.crop;
    info.classifier_prefix = "classifier.";
    info.feature_channels = spec.feature_channels();
    info.parameters = w.parameters;
    info.imagenet_top1 = w.top1;
    info.layer_groups = "features.0-3 / features.4-8 / head";
    info.onnx = efficientnet_onnx();
    rows.push_back(std::move(info));
  }
  return rows;
}

}  // namespace ltfit
