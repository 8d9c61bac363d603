// timm's parameter names mapped to torchvision's (timm_names.h).
#include "ltfit/model/timm_names.h"

#include <torch/torch.h>

#include <map>
#include <optional>

#include "ltfit/util/error.h"

namespace ltfit {

namespace {

// "a.b.c" split at its first `count` dots: {"a", "b", "c"} for count 2.
std::vector<std::string> split_head(const std::string& key, int count) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (int i = 0; i < count; ++i) {
    const std::size_t dot = key.find('.', start);
    if (dot == std::string::npos) break;
    parts.push_back(key.substr(start, dot - start));
    start = dot + 1;
  }
  parts.push_back(key.substr(start));
  return parts;
}

// An index as timm writes it: a few digits (so std::stoi cannot overflow on a hostile key).
bool all_digits(const std::string& s) {
  return !s.empty() && s.size() <= 4 && s.find_first_not_of("0123456789") == std::string::npos;
}

// The first of `pairs` whose timm prefix starts `rest`, with its torchvision prefix in its place.
std::optional<std::string> replace_prefix(
    const std::string& rest, const std::vector<std::pair<std::string, std::string>>& pairs) {
  for (const auto& [from, to] : pairs) {
    if (rest.rfind(from, 0) == 0) return to + rest.substr(from.size());
  }
  return std::nullopt;
}

std::optional<std::string> convnext_name(const std::string& key) {
  if (auto r = replace_prefix(key, {{"stem.0.", "features.0.0."},
                                    {"stem.1.", "features.0.1."},
                                    {"head.norm.", "classifier.0."},
                                    {"head.fc.", "classifier.2."}})) {
    return r;
  }
  const auto p = split_head(key, 3);  // stages, S, downsample|blocks, rest
  if (p.size() != 4 || p[0] != "stages" || !all_digits(p[1])) return std::nullopt;
  const int stage = std::stoi(p[1]);
  if (p[2] == "downsample") {
    if (stage == 0) return std::nullopt;
    return "features." + std::to_string(2 * stage) + "." + p[3];
  }
  if (p[2] != "blocks") return std::nullopt;
  const auto b = split_head(p[3], 1);  // B, rest
  if (b.size() != 2 || !all_digits(b[0])) return std::nullopt;
  const std::string block = "features." + std::to_string(2 * stage + 1) + "." + b[0] + ".";
  if (b[1] == "gamma") return block + "layer_scale";
  if (auto r = replace_prefix(b[1], {{"conv_dw.", "block.0."},
                                     {"norm.", "block.2."},
                                     {"mlp.fc1.", "block.3."},
                                     {"mlp.fc2.", "block.5."}})) {
    return block + *r;
  }
  return std::nullopt;
}

// EfficientNet: `inverted` says whether the key's block is an inverted residual (it has a
// conv_pwl) rather than stage 0's depthwise-separable one; `stages` is the number of stages.
std::optional<std::string> efficientnet_name(const std::string& key, bool inverted, int stages) {
  const std::string head = "features." + std::to_string(stages + 1) + ".";
  if (auto r = replace_prefix(key, {{"conv_stem.", "features.0.0."},
                                    {"bn1.", "features.0.1."},
                                    {"conv_head.", head + "0."},
                                    {"bn2.", head + "1."},
                                    {"classifier.", "classifier.1."}})) {
    return r;
  }
  const auto p = split_head(key, 3);  // blocks, S, B, rest
  if (p.size() != 4 || p[0] != "blocks" || !all_digits(p[1]) || !all_digits(p[2])) {
    return std::nullopt;
  }
  const std::string block =
      "features." + std::to_string(std::stoi(p[1]) + 1) + "." + p[2] + ".block.";
  const std::vector<std::pair<std::string, std::string>> separable = {
      {"conv_dw.", "0.0."},          {"bn1.", "0.1."},     {"se.conv_reduce.", "1.fc1."},
      {"se.conv_expand.", "1.fc2."}, {"conv_pw.", "2.0."}, {"bn2.", "2.1."}};
  const std::vector<std::pair<std::string, std::string>> residual = {
      {"conv_pw.", "0.0."},          {"bn1.", "0.1."},
      {"conv_dw.", "1.0."},          {"bn2.", "1.1."},
      {"se.conv_reduce.", "2.fc1."}, {"se.conv_expand.", "2.fc2."},
      {"conv_pwl.", "3.0."},         {"bn3.", "3.1."}};
  if (auto r = replace_prefix(p[3], inverted ? residual : separable)) return block + *r;
  return std::nullopt;
}

// The block prefix ("blocks.S.B.") of an EfficientNet key, or "".
std::string efficientnet_block(const std::string& key) {
  const auto p = split_head(key, 3);
  return p.size() == 4 && p[0] == "blocks" ? p[0] + "." + p[1] + "." + p[2] + "." : "";
}

StateDict map_efficientnet(StateDict state, const std::string& source) {
  std::map<std::string, bool> inverted;  // block prefix -> has a conv_pwl
  int stages = 0;
  for (const auto& [key, tensor] : state) {
    const std::string block = efficientnet_block(key);
    if (block.empty()) continue;
    inverted[block] |= key.find(".conv_pwl.") != std::string::npos;
    const std::string stage = split_head(key, 3)[1];
    if (all_digits(stage)) stages = std::max(stages, std::stoi(stage) + 1);
  }
  for (auto& [key, tensor] : state) {
    const std::string block = efficientnet_block(key);
    const auto name = efficientnet_name(key, !block.empty() && inverted[block], stages);
    if (!name) {
      throw CheckpointError("weight file '" + source + "': timm's EfficientNet key '" + key +
                            "' has no torchvision counterpart ltfit knows");
    }
    key = *name;
  }
  return state;
}

StateDict map_convnext(StateDict state, const std::string& source) {
  for (auto& [key, tensor] : state) {
    const auto name = convnext_name(key);
    if (!name) {
      throw CheckpointError("weight file '" + source + "': timm's ConvNeXt key '" + key +
                            "' has no torchvision counterpart ltfit knows");
    }
    if (key.size() > 6 && key.compare(key.size() - 6, 6, ".gamma") == 0 && tensor.dim() == 1) {
      tensor = tensor.reshape({tensor.size(0), 1, 1});  // torchvision's layer_scale [C,1,1]
    }
    key = *name;
  }
  return state;
}

// A timm VisionTransformer key (global_pool "token", no layer scale or registers) as
// torchvision's VisionTransformer names it, or nullopt.
std::optional<std::string> vit_name(const std::string& key) {
  static const std::vector<std::pair<std::string, std::string>> top = {
      {"cls_token", "class_token"},
      {"pos_embed", "encoder.pos_embedding"},
      {"patch_embed.proj.", "conv_proj."},
      {"norm.", "encoder.ln."},
      {"head.", "heads.head."}};
  if (key == "cls_token" || key == "pos_embed") return replace_prefix(key, top);
  const auto p = split_head(key, 2);  // blocks, B, rest
  if (p.size() != 3 || p[0] != "blocks") {
    return key.find('.') == std::string::npos ? std::nullopt : replace_prefix(key, top);
  }
  if (!all_digits(p[1])) return std::nullopt;
  static const std::vector<std::pair<std::string, std::string>> block = {
      {"norm1.", "ln_1."},
      {"attn.qkv.weight", "self_attention.in_proj_weight"},
      {"attn.qkv.bias", "self_attention.in_proj_bias"},
      {"attn.proj.", "self_attention.out_proj."},
      {"norm2.", "ln_2."},
      {"mlp.fc1.", "mlp.0."},
      {"mlp.fc2.", "mlp.3."}};
  const auto rest = replace_prefix(p[2], block);
  if (!rest) return std::nullopt;
  return "encoder.layers.encoder_layer_" + std::to_string(std::stoi(p[1])) + "." + *rest;
}

StateDict map_vit(StateDict state, const std::string& source) {
  for (auto& [key, tensor] : state) {
    const auto name = vit_name(key);
    if (!name) {
      throw CheckpointError("weight file '" + source + "': timm's ViT key '" + key +
                            "' has no torchvision counterpart ltfit knows (ltfit's ViT is "
                            "torchvision's: class-token pooling, no layer scale, no registers)");
    }
    key = *name;
  }
  return state;
}

// A timm RegNet key ("stem.conv.*", "sS.bB.*", "head.fc.*"; S and B count from 1) as
// torchvision's RegNet names it ("stem.0.*", "trunk_output.blockS.blockS-(B-1).*", "fc.*"), or
// nullopt.
std::optional<std::string> timm_regnet_name(const std::string& key) {
  if (auto r = replace_prefix(
          key, {{"stem.conv.", "stem.0."}, {"stem.bn.", "stem.1."}, {"head.fc.", "fc."}})) {
    return r;
  }
  const auto p = split_head(key, 2);  // sS, bB, rest
  if (p.size() != 3 || p[0].size() < 2 || p[0][0] != 's' || p[1].size() < 2 || p[1][0] != 'b') {
    return std::nullopt;
  }
  const std::string s = p[0].substr(1), b = p[1].substr(1);
  if (!all_digits(s) || !all_digits(b) || std::stoi(s) < 1 || std::stoi(b) < 1) {
    return std::nullopt;
  }
  static const std::vector<std::pair<std::string, std::string>> block = {
      {"conv1.conv.", "f.a.0."},    {"conv1.bn.", "f.a.1."},  {"conv2.conv.", "f.b.0."},
      {"conv2.bn.", "f.b.1."},      {"se.fc1.", "f.se.fc1."}, {"se.fc2.", "f.se.fc2."},
      {"conv3.conv.", "f.c.0."},    {"conv3.bn.", "f.c.1."},  {"downsample.conv.", "proj.0."},
      {"downsample.bn.", "proj.1."}};
  const auto rest = replace_prefix(p[2], block);
  if (!rest) return std::nullopt;
  const std::string stage = "block" + std::to_string(std::stoi(s));
  return "trunk_output." + stage + "." + stage + "-" + std::to_string(std::stoi(b) - 1) + "." +
         *rest;
}

// The output widths of a timm RegNet state's stages ("sS.b1.conv3.conv.weight"'s dim 0, S from
// 1 up while present).
std::vector<std::int64_t> timm_regnet_widths(const StateDict& state) {
  std::vector<std::int64_t> widths;
  for (bool found = true; found;) {
    found = false;
    const std::string key = "s" + std::to_string(widths.size() + 1) + ".b1.conv3.conv.weight";
    for (const auto& [name, tensor] : state) {
      if (name == key && tensor.dim() == 4) {
        widths.push_back(tensor.size(0));
        found = true;
        break;
      }
    }
  }
  return widths;
}

// timm's RegNet-Y (regnety_016, regnety_008_tv) is torchvision's module for module. timm's
// regnety_008 is not: pycls rounds its widths to other multiples of the group width (stages
// 64, 128, 320, 768 wide against torchvision's regnet_y_800mf's 64, 144, 320, 784); it is
// recognised by those widths and refused, rather than left to the strict load's first shape
// mismatch.
StateDict map_timm_regnet(StateDict state, const std::string& source) {
  if (timm_regnet_widths(state) == std::vector<std::int64_t>{64, 128, 320, 768}) {
    throw CheckpointError("weight file '" + source +
                              "' holds timm's regnety_008 (pycls' stage widths 64, 128, 320, "
                              "768), not torchvision's regnet_y_800mf (64, 144, 320, 784)",
                          "use timm's regnety_008_tv (model.pretrained: "
                          "timm/regnety_008_tv.tv2_in1k) or torchvision's weights (imagenet)");
  }
  for (auto& [key, tensor] : state) {
    const auto name = timm_regnet_name(key);
    if (!name) {
      throw CheckpointError("weight file '" + source + "': timm's RegNet key '" + key +
                            "' has no torchvision counterpart ltfit knows");
    }
    key = *name;
  }
  return state;
}

// What a timm MobileNetV3 block ("blocks.S.B.") holds, and its index in torchvision's features.
struct TimmMobileNetV3Block {
  bool conv_bn = false;   // timm's ConvBnAct (conv, bn1): torchvision's last Conv2dNormActivation
  bool inverted = false;  // an InvertedResidual (conv_pwl), else a DepthwiseSeparableConv
  bool se = false;        // has a squeeze-excitation, which shifts the projection's index
  int feature = 0;        // features.N (the stem is features.0)
};

// The blocks of a timm MobileNetV3 state, keyed by (S, B), numbered in that order from 1 as
// torchvision's flat `features` numbers them.
std::map<std::pair<int, int>, TimmMobileNetV3Block> timm_mobilenet_v3_blocks(
    const StateDict& state) {
  std::map<std::pair<int, int>, TimmMobileNetV3Block> blocks;
  for (const auto& [key, tensor] : state) {
    const auto p = split_head(key, 3);  // blocks, S, B, rest
    if (p.size() != 4 || p[0] != "blocks" || !all_digits(p[1]) || !all_digits(p[2])) continue;
    TimmMobileNetV3Block& block = blocks[{std::stoi(p[1]), std::stoi(p[2])}];
    block.conv_bn |= p[3].rfind("conv.", 0) == 0;
    block.inverted |= p[3].rfind("conv_pwl.", 0) == 0;
    block.se |= p[3].rfind("se.", 0) == 0;
  }
  int feature = 1;
  for (auto& [index, block] : blocks) block.feature = feature++;
  return blocks;
}

// A timm MobileNetV3 block key's rest (after "blocks.S.B.") as torchvision names it under
// features.N, or nullopt.
std::optional<std::string> timm_mobilenet_v3_block_name(const std::string& rest,
                                                        const TimmMobileNetV3Block& block) {
  if (block.conv_bn) return replace_prefix(rest, {{"conv.", "0."}, {"bn1.", "1."}});
  // torchvision's InvertedResidual: [expand,] depthwise, [SE,] project; timm's
  // DepthwiseSeparableConv is the one without an expansion (expand ratio 1).
  const int project = (block.inverted ? 2 : 1) + (block.se ? 1 : 0);
  const std::string se = block.inverted ? "2." : "1.";
  const std::string pw = std::to_string(project) + ".";
  if (block.inverted) {
    return replace_prefix(rest, {{"conv_pw.", "block.0.0."},
                                 {"bn1.", "block.0.1."},
                                 {"conv_dw.", "block.1.0."},
                                 {"bn2.", "block.1.1."},
                                 {"se.conv_reduce.", "block." + se + "fc1."},
                                 {"se.conv_expand.", "block." + se + "fc2."},
                                 {"conv_pwl.", "block." + pw + "0."},
                                 {"bn3.", "block." + pw + "1."}});
  }
  return replace_prefix(rest, {{"conv_dw.", "block.0.0."},
                               {"bn1.", "block.0.1."},
                               {"se.conv_reduce.", "block." + se + "fc1."},
                               {"se.conv_expand.", "block." + se + "fc2."},
                               {"conv_pw.", "block." + pw + "0."},
                               {"bn2.", "block." + pw + "1."}});
}

// A timm MobileNetV3 key as torchvision names it, or nullopt. timm's conv_head (a 1x1 conv with
// a bias after the pooling) is torchvision's classifier.0 Linear; its classifier, classifier.3.
std::optional<std::string> timm_mobilenet_v3_name(
    const std::string& key, const std::map<std::pair<int, int>, TimmMobileNetV3Block>& blocks) {
  if (auto r = replace_prefix(key, {{"conv_stem.", "features.0.0."},
                                    {"bn1.", "features.0.1."},
                                    {"conv_head.", "classifier.0."},
                                    {"classifier.", "classifier.3."}})) {
    return r;
  }
  const auto p = split_head(key, 3);  // blocks, S, B, rest
  if (p.size() != 4 || p[0] != "blocks" || !all_digits(p[1]) || !all_digits(p[2])) {
    return std::nullopt;
  }
  const auto it = blocks.find({std::stoi(p[1]), std::stoi(p[2])});
  if (it == blocks.end()) return std::nullopt;
  const auto rest = timm_mobilenet_v3_block_name(p[3], it->second);
  if (!rest) return std::nullopt;
  return "features." + std::to_string(it->second.feature) + "." + *rest;
}

// timm's MobileNetV3 (mobilenetv3_large_100, mobilenetv3_small_100) is torchvision's but for
// BatchNorm's eps: timm's 1e-5, torchvision's (and ltfit's) 1e-3. running_var + 1e-5 - 1e-3 makes
// torchvision's var + eps timm's exactly (it may go below 0 for channels with var < 1e-3; var + eps
// stays positive, and a fine-tuning's batch statistics blend in as usual).
StateDict map_timm_mobilenet_v3(StateDict state, const std::string& source) {
  const auto blocks = timm_mobilenet_v3_blocks(state);
  constexpr double kTimmEps = 1e-5, kTorchvisionEps = 1e-3;
  for (auto& [key, tensor] : state) {
    const auto name = timm_mobilenet_v3_name(key, blocks);
    if (!name) {
      throw CheckpointError("weight file '" + source + "': timm's MobileNetV3 key '" + key +
                            "' has no torchvision counterpart ltfit knows");
    }
    if (key == "conv_head.weight" && tensor.dim() == 4 && tensor.size(2) == 1 &&
        tensor.size(3) == 1) {
      tensor = tensor.reshape({tensor.size(0), tensor.size(1)});  // [O,I,1,1] -> Linear's [O,I]
    }
    if (key.ends_with(".running_var") && tensor.is_floating_point()) {
      tensor = tensor + (kTimmEps - kTorchvisionEps);
    }
    key = *name;
  }
  return state;
}

bool has_key(const StateDict& state, const std::string& key) {
  for (const auto& [name, tensor] : state) {
    if (name == key) return true;
  }
  return false;
}

}  // namespace

StateDict from_timm_names(StateDict state, const std::string& family, const std::string& source,
                          bool* mapped) {
  if (mapped != nullptr) *mapped = false;
  if (family == "convnext" && has_key(state, "stem.0.weight")) {
    if (mapped != nullptr) *mapped = true;
    return map_convnext(std::move(state), source);
  }
  if (family == "efficientnet" && has_key(state, "conv_stem.weight")) {
    if (mapped != nullptr) *mapped = true;
    return map_efficientnet(std::move(state), source);
  }
  if (family == "vit" && has_key(state, "cls_token")) {
    if (mapped != nullptr) *mapped = true;
    return map_vit(std::move(state), source);
  }
  if (family == "regnet" && has_key(state, "stem.conv.weight")) {
    if (mapped != nullptr) *mapped = true;
    return map_timm_regnet(std::move(state), source);
  }
  if (family == "mobilenet_v3" && has_key(state, "conv_stem.weight")) {
    if (mapped != nullptr) *mapped = true;
    return map_timm_mobilenet_v3(std::move(state), source);
  }
  return state;  // ResNet: timm's names are torchvision's
}

}  // namespace ltfit
