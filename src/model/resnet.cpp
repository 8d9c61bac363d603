// The ResNet family (resnet.h): blocks, the body, its layer groups and its registry rows.
#include "ltfit/model/resnet.h"

#include <torch/nn/functional/pooling.h>
#include <torch/nn/init.h>
#include <torch/nn/options/conv.h>

#include "ltfit/model/batch_norm_fold.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace F = torch::nn::functional;

namespace {

torch::nn::Conv2d conv(std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t stride,
                       std::int64_t groups = 1) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                               .stride(stride)
                               .padding(kernel / 2)
                               .groups(groups)
                               .bias(false));
}

// What torchvision publishes per arch: the weights (IMAGENET1K_V1; V2 for ResNeXt and Wide
// ResNet, whose V1 files predate torch's zip format), their ImageNet acc@1, parameter count and
// eval resize (the crop is 224 px, bilinear, for all).
struct Published {
  const char* file;
  double top1;
  std::int64_t parameters;
  int resize;
};

// The family's archs: each one's shape and what torchvision publishes for it, in one row.
struct ResNetRow {
  ResNetSpec spec;
  Published published;
};

const std::vector<ResNetRow>& resnet_rows() {
  static const std::vector<ResNetRow> rows = {
      {{"resnet18", false, {2, 2, 2, 2}}, {"resnet18-f37072fd.pth", 69.758, 11689512, 256}},
      {{"resnet34", false, {3, 4, 6, 3}}, {"resnet34-b627a593.pth", 73.314, 21797672, 256}},
      {{"resnet50", true, {3, 4, 6, 3}}, {"resnet50-0676ba61.pth", 76.13, 25557032, 256}},
      {{"resnet101", true, {3, 4, 23, 3}}, {"resnet101-63fe2227.pth", 77.374, 44549160, 256}},
      {{"resnet152", true, {3, 8, 36, 3}}, {"resnet152-394f9c45.pth", 78.312, 60192808, 256}},
      {{"resnext50_32x4d", true, {3, 4, 6, 3}, /*groups=*/32, /*width_per_group=*/4},
       {"resnext50_32x4d-1a0047aa.pth", 81.198, 25028904, 232}},
      {{"wide_resnet50_2", true, {3, 4, 6, 3}, /*groups=*/1, /*width_per_group=*/128},
       {"wide_resnet50_2-9ba9bcbe.pth", 81.602, 68883240, 232}},
  };
  return rows;
}

}  // namespace

ResNetSpec resnet_spec(const std::string& arch) {
  for (const auto& row : resnet_rows()) {
    if (row.spec.arch == arch) return row.spec;
  }
  throw ConfigError("model.arch: '" + arch + "' is not a ResNet (ltfit models lists the archs)");
}

std::vector<ArchInfo> resnet_archs() {
  std::vector<ArchInfo> rows;
  for (const auto& [spec, p] : resnet_rows()) {
    ArchInfo info;
    info.name = spec.arch;
    info.family = "resnet";
    info.make = family_constructor<ResNetImpl>(spec);
    info.weights_file = p.file;
    info.interpolation = "bilinear";
    info.eval_resize = p.resize;
    info.eval_crop = 224;
    info.classifier_prefix = "fc.";
    info.feature_channels = spec.feature_channels();
    info.parameters = p.parameters;
    info.imagenet_top1 = p.top1;
    info.layer_groups = "conv1, bn1, layer1, layer2 / layer3, layer4 / head";
    info.onnx = resnet_onnx();
    rows.push_back(std::move(info));
  }
  return rows;
}

ResidualBlockImpl::ResidualBlockImpl(std::int64_t in_channels, std::int64_t planes,
                                     std::int64_t stride, const ResNetSpec& spec)
    : bottleneck_(spec.bottleneck) {
  const std::int64_t out_channels = bottleneck_ ? planes * 4 : planes;
  if (bottleneck_) {  // torchvision: width = int(planes * width_per_group / 64) * groups
    const std::int64_t width = planes * spec.width_per_group / 64 * spec.groups;
    conv1_ = register_module("conv1", conv(in_channels, width, 1, 1));
    bn1_ = register_module("bn1", torch::nn::BatchNorm2d(width));
    conv2_ = register_module("conv2", conv(width, width, 3, stride, spec.groups));
    bn2_ = register_module("bn2", torch::nn::BatchNorm2d(width));
    conv3_ = register_module("conv3", conv(width, out_channels, 1, 1));
    bn3_ = register_module("bn3", torch::nn::BatchNorm2d(out_channels));
  } else {
    conv1_ = register_module("conv1", conv(in_channels, planes, 3, stride));
    bn1_ = register_module("bn1", torch::nn::BatchNorm2d(planes));
    conv2_ = register_module("conv2", conv(planes, planes, 3, 1));
    bn2_ = register_module("bn2", torch::nn::BatchNorm2d(planes));
  }
  if (stride != 1 || in_channels != out_channels) {
    downsample_ =
        register_module("downsample", ConvNormAct(conv(in_channels, out_channels, 1, stride),
                                                  torch::nn::BatchNorm2d(out_channels)));
  }
}

// In-place ReLUs and residual sum, as torchvision's: none of them overwrites a tensor that
// autograd keeps (a BatchNorm's or convolution's output is not kept for its backward).
torch::Tensor ResidualBlockImpl::forward(const torch::Tensor& x) {
  torch::Tensor out = norm_unless_folded(bn1_, conv1_(x)).relu_();
  out = norm_unless_folded(bn2_, conv2_(out));
  if (bottleneck_) out = norm_unless_folded(bn3_, conv3_(out.relu_()));
  const torch::Tensor identity = downsample_ ? downsample_->forward(x) : x;
  return out.add_(identity).relu_();
}

std::int64_t ResidualBlockImpl::fold_batch_norms() {
  fold_into(*this, "bn1", *conv1_, bn1_);
  fold_into(*this, "bn2", *conv2_, bn2_);
  if (!bottleneck_) return 2;
  fold_into(*this, "bn3", *conv3_, bn3_);
  return 3;
}

ResNetImpl::ResNetImpl(const ResNetSpec& spec, std::int64_t num_classes, HeadKind head,
                       double dropout, Stem stem)
    : ClassifierImpl(spec.arch, spec.feature_channels()),
      spec_(spec),
      cifar_stem_(stem == Stem::kCifar) {
  LTFIT_CHECK(spec.blocks.size() == 4, "a ResNet has four stages");
  LTFIT_CHECK(num_classes > 0, "num_classes must be positive");
  conv1_ = register_module(
      "conv1",
      torch::nn::Conv2d(cifar_stem_
                            ? torch::nn::Conv2dOptions(3, 64, 3).stride(1).padding(1).bias(false)
                            : torch::nn::Conv2dOptions(3, 64, 7).stride(2).padding(3).bias(false)));
  bn1_ = register_module("bn1", torch::nn::BatchNorm2d(64));
  layer1_ = register_module("layer1", make_stage(64, spec.blocks[0], 1));
  layer2_ = register_module("layer2", make_stage(128, spec.blocks[1], 2));
  layer3_ = register_module("layer3", make_stage(256, spec.blocks[2], 2));
  layer4_ = register_module("layer4", make_stage(512, spec.blocks[3], 2));
  torch::NoGradGuard no_grad;
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* c = module->as<torch::nn::Conv2d>()) {
      torch::nn::init::kaiming_normal_(c->weight, /*a=*/0.0, torch::kFanOut, torch::kReLU);
    } else if (auto* bn = module->as<torch::nn::BatchNorm2d>()) {
      bn->weight.fill_(1.0);
      bn->bias.zero_();
    }
  }
  if (head == HeadKind::kLinear) {
    fc_ = register_module("fc", torch::nn::Linear(spec.feature_channels(), num_classes));
  } else {
    add_fastai_head(num_classes, dropout);
  }
}

torch::nn::Sequential ResNetImpl::make_stage(std::int64_t planes, int blocks, std::int64_t stride) {
  torch::nn::Sequential stage;
  for (int i = 0; i < blocks; ++i) {
    stage->push_back(ResidualBlock(in_channels_, planes, i == 0 ? stride : 1, spec_));
    in_channels_ = spec_.bottleneck ? planes * 4 : planes;
  }
  return stage;
}

torch::Tensor ResNetImpl::features(const torch::Tensor& x) {
  torch::Tensor out = norm_unless_folded(bn1_, conv1_(x)).relu_();
  if (!cifar_stem_) out = F::max_pool2d(out, F::MaxPool2dFuncOptions(3).stride(2).padding(1));
  return layer4_->forward(layer3_->forward(layer2_->forward(layer1_->forward(out))));
}

torch::Tensor ResNetImpl::linear_head(const torch::Tensor& maps) {
  return fc_(F::adaptive_avg_pool2d(maps, F::AdaptiveAvgPool2dFuncOptions(1)).flatten(1));
}

std::int64_t ResNetImpl::fold_body_batch_norms() {
  fold_into(*this, "bn1", *conv1_, bn1_);
  std::int64_t folded = 1;
  for (const auto& stage : {layer1_, layer2_, layer3_, layer4_}) {
    for (const auto& block : stage->children()) {
      folded += block->as<ResidualBlockImpl>()->fold_batch_norms();
    }
  }
  return folded;
}

std::vector<std::vector<torch::nn::Module*>> ResNetImpl::body_groups() {
  return {{conv1_.get(), bn1_.get(), layer1_.get(), layer2_.get()}, {layer3_.get(), layer4_.get()}};
}

}  // namespace ltfit
