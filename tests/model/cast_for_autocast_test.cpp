// The convolutions' and linear layers' weights cast once for autocast (classifier.h's
// cast_for_autocast, what predict and serve do when they run in bf16): each family's logits
// under bf16 autocast equal, bit for bit, those of the same model whose fp32 weights autocast
// casts at each forward; the memory format and the other parameters (LayerNorm's) are kept.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <string>

#include "ltfit/model/arch_registry.h"
#include "ltfit/model/classifier.h"
#include "ltfit/util/precision.h"

TEST_CASE("weights cast once for bf16 autocast give the logits autocast gives", "[model]") {
  const std::string arch =
      GENERATE(as<std::string>{}, "resnet18", "efficientnet_b0", "mobilenet_v3_small",
               "convnext_tiny", "regnet_y_800mf", "vit_b_16", "swin_t");
  INFO(arch);
  const bool token_body = arch == "vit_b_16" || arch == "swin_t";
  const int size = token_body ? 224 : 64;  // the transformers at their weights' size
  torch::manual_seed(3);
  ltfit::Classifier model = ltfit::make_classifier(arch, 7);
  model->eval();
  model->fold_batch_norms();
  ltfit::set_channels_last(model);
  torch::InferenceMode inference;
  const torch::Tensor x =
      torch::randn({2, 3, size, size}).contiguous(torch::MemoryFormat::ChannelsLast);
  auto logits = [&] {
    ltfit::AutocastGuard autocast(torch::kCPU, torch::kBFloat16);
    return model->forward(x).to(torch::kFloat32);
  };
  const torch::Tensor before = logits();
  const std::int64_t cast = ltfit::cast_for_autocast(model, torch::kBFloat16);
  CHECK(cast > 0);
  const torch::Tensor after = logits();
  CHECK(torch::equal(before, after));
  std::int64_t low = 0, kept_fp32 = 0;
  for (const auto& p : model->named_parameters()) {
    if (p.value().scalar_type() == torch::kBFloat16) {
      ++low;
      if (p.value().dim() == 4) CHECK(p.value().is_contiguous(torch::MemoryFormat::ChannelsLast));
    } else {
      CHECK(p.value().scalar_type() == torch::kFloat32);
      ++kept_fp32;
    }
  }
  CHECK(low >= cast);                    // each cast layer's weight, and its bias where it has one
  if (token_body) CHECK(kept_fp32 > 0);  // LayerNorms, the class token, position tables
}
