// The Swin family as ONNX (swin.h, onnx_emitter.h), for the export's fixed input size: every
// map's height and width are known while the graph is written, so the window padding (Pad), the
// cyclic shift (two Slices and a Concat per axis), the window partition (Reshape, Transpose) and
// the shifted windows' attention mask (a constant) are those of that size, as torchvision's
// forward computes them for it. The relative position bias is a Gather of the bias table (an
// initializer under its state-dict name) by the index. Stochastic depth and Dropout are gone.
#include <torch/nn/modules/normalization.h>

#include "ltfit/model/swin.h"
#include "ltfit/util/error.h"

namespace ltfit {
namespace {

using Ints = std::vector<std::int64_t>;

// The height and width of every map at one point of the body.
struct SwinOnnxSize {
  std::int64_t h = 0, w = 0;
};

std::string swin_ints(OnnxEmitter& e, const std::string& hint, const Ints& values) {
  return e.constant(hint, torch::tensor(values, torch::kLong));
}

std::string swin_reshape(OnnxEmitter& e, const std::string& x, const Ints& shape,
                         const std::string& hint) {
  return e.op("Reshape", {x, swin_ints(e, hint + ".shape", shape)}, {}, hint);
}

// x[..., start:end] along `axis`.
std::string swin_slice(OnnxEmitter& e, const std::string& x, std::int64_t axis, std::int64_t start,
                       std::int64_t end, const std::string& hint) {
  return e.op("Slice",
              {x, swin_ints(e, hint + ".starts", {start}), swin_ints(e, hint + ".ends", {end}),
               swin_ints(e, hint + ".axes", {axis})},
              {}, hint);
}

// torch.roll(x, shift, axis) for a dimension of `size`: the last `shift` (mod size) rows first.
std::string swin_roll(OnnxEmitter& e, const std::string& x, std::int64_t shift, std::int64_t axis,
                      std::int64_t size, const std::string& hint) {
  const std::int64_t split = ((size - shift) % size + size) % size;
  if (split == 0) return x;
  return e.op("Concat",
              {swin_slice(e, x, axis, split, size, hint + ".tail"),
               swin_slice(e, x, axis, 0, split, hint + ".head")},
              {{"axis", axis}}, hint);
}

// [N,H,W,C] zero-padded at the bottom by `bottom` rows and at the right by `right` columns.
std::string swin_pad(OnnxEmitter& e, const std::string& x, std::int64_t bottom, std::int64_t right,
                     const std::string& hint) {
  if (bottom == 0 && right == 0) return x;
  return e.op("Pad", {x, swin_ints(e, hint + ".pads", {0, 0, 0, 0, 0, bottom, right, 0})}, {},
              hint);
}

// [1, heads, L, L]: relative_position_bias_table gathered by relative_position_index.
std::string swin_position_bias(OnnxEmitter& e, const std::string& path,
                               const ShiftedWindowAttentionImpl& attn) {
  const std::int64_t tokens = attn.window() * attn.window();
  const std::string index =
      e.constant(path + ".relative_position_index", attn.relative_position_index);
  std::string bias = e.op("Gather", {e.tensor(path + ".relative_position_bias_table"), index},
                          {{"axis", std::int64_t{0}}}, path + ".bias_gather");
  bias = swin_reshape(e, bias, {1, tokens, tokens, attn.heads()}, path + ".bias_reshape");
  return e.transpose(bias, {0, 3, 1, 2}, path + ".bias");
}

// Multi-head attention within windows: [N*windows, L, C] -> [N*windows, L, C] (before proj);
// `mask` the constant [1, windows, 1, L, L] or "" for unshifted windows.
std::string swin_window_attention(OnnxEmitter& e, const std::string& path,
                                  const ShiftedWindowAttentionImpl& attn, const std::string& x,
                                  std::int64_t channels, std::int64_t windows,
                                  const std::string& mask) {
  const std::int64_t heads = attn.heads(), tokens = attn.window() * attn.window();
  std::string qkv = e.linear(path + ".qkv", x, /*last_axis=*/true);
  qkv = swin_reshape(e, qkv, {-1, tokens, 3, heads, channels / heads}, path + ".qkv_heads");
  qkv = e.transpose(qkv, {2, 0, 3, 1, 4}, path + ".qkv_split");  // [3, B, heads, L, d]
  auto pick = [&](std::int64_t i, const std::string& name) {
    return e.op("Gather", {qkv, e.constant(path + ".index", torch::tensor(i, torch::kLong))},
                {{"axis", std::int64_t{0}}}, path + "." + name);
  };
  const float scale = static_cast<float>(std::pow(static_cast<double>(channels / heads), -0.5));
  const std::string q =
      e.op("Mul", {pick(0, "q"), e.constant(path + ".scale", torch::tensor(scale))}, {},
           path + ".q_scaled");
  const std::string k_t = e.transpose(pick(1, "k"), {0, 1, 3, 2}, path + ".k_t");
  std::string scores = e.op("MatMul", {q, k_t}, {}, path + ".scores");
  scores = e.op("Add", {scores, swin_position_bias(e, path, attn)}, {}, path + ".biased");
  if (!mask.empty()) {
    scores = swin_reshape(e, scores, {-1, windows, heads, tokens, tokens}, path + ".by_window");
    scores = e.op("Add", {scores, mask}, {}, path + ".masked");
    scores = swin_reshape(e, scores, {-1, heads, tokens, tokens}, path + ".by_head");
  }
  const std::string probs =
      e.op("Softmax", {scores}, {{"axis", std::int64_t{-1}}}, path + ".softmax");
  std::string out = e.op("MatMul", {probs, pick(2, "v")}, {}, path + ".context");
  out = e.transpose(out, {0, 2, 1, 3}, path + ".context_t");
  return swin_reshape(e, out, {-1, tokens, channels}, path + ".merge_heads");
}

// torchvision's shifted_window_attention on [N,H,W,C] of `size` -> [N,H,W,C].
std::string swin_attention(OnnxEmitter& e, const std::string& path, const std::string& input,
                           SwinOnnxSize size, std::int64_t channels) {
  const auto& attn = e.module_as<ShiftedWindowAttentionImpl>(path);
  const std::int64_t ws = attn.window();
  const std::int64_t pad_b = (ws - size.h % ws) % ws, pad_r = (ws - size.w % ws) % ws;
  const std::int64_t ph = size.h + pad_b, pw = size.w + pad_r;
  const std::int64_t sh = swin_effective_shift(ws, attn.shift(), ph);
  const std::int64_t sw = swin_effective_shift(ws, attn.shift(), pw);
  std::string x = swin_pad(e, input, pad_b, pad_r, path + ".pad");
  x = swin_roll(e, swin_roll(e, x, -sh, 1, ph, path + ".roll_h"), -sw, 2, pw, path + ".roll_w");
  const std::int64_t windows = (ph / ws) * (pw / ws);
  x = swin_reshape(e, x, {-1, ph / ws, ws, pw / ws, ws, channels}, path + ".grid");
  x = e.transpose(x, {0, 1, 3, 2, 4, 5}, path + ".grid_t");
  x = swin_reshape(e, x, {-1, ws * ws, channels}, path + ".windows");
  std::string mask;
  if (sh + sw > 0) {
    mask = e.constant(path + ".attn_mask",
                      swin_attention_mask(ph, pw, ws, sh, sw).unsqueeze(1).unsqueeze(0));
  }
  x = swin_window_attention(e, path, attn, x, channels, windows, mask);
  x = e.linear(path + ".proj", x, /*last_axis=*/true);
  x = swin_reshape(e, x, {-1, ph / ws, pw / ws, ws, ws, channels}, path + ".ungrid");
  x = e.transpose(x, {0, 1, 3, 2, 4, 5}, path + ".ungrid_t");
  x = swin_reshape(e, x, {-1, ph, pw, channels}, path + ".unwindowed");
  x = swin_roll(e, swin_roll(e, x, sh, 1, ph, path + ".unroll_h"), sw, 2, pw, path + ".unroll_w");
  if (pad_b == 0 && pad_r == 0) return x;
  return e.op("Slice",
              {x, swin_ints(e, path + ".crop.starts", {0, 0}),
               swin_ints(e, path + ".crop.ends", {size.h, size.w}),
               swin_ints(e, path + ".crop.axes", {1, 2})},
              {}, path + ".crop");
}

double swin_norm_eps(OnnxEmitter& e, const std::string& path) {
  return e.module_as<torch::nn::LayerNormImpl>(path).options.eps();
}

std::string swin_layer_norm_at(OnnxEmitter& e, const std::string& path, const std::string& x) {
  return e.layer_norm(path, swin_norm_eps(e, path), x);
}

// SwinTransformerBlock: x + attn(norm1(x)), then + mlp(norm2(.)) (stochastic depth gone).
std::string swin_block(OnnxEmitter& e, const std::string& path, const std::string& x,
                       SwinOnnxSize size, std::int64_t channels) {
  const std::string attended =
      swin_attention(e, path + ".attn", swin_layer_norm_at(e, path + ".norm1", x), size, channels);
  const std::string mid = e.op("Add", {x, attended}, {}, path + ".add1");
  std::string mlp = swin_layer_norm_at(e, path + ".norm2", mid);
  mlp = e.gelu(e.linear(path + ".mlp.0", mlp, /*last_axis=*/true), path + ".mlp.1");
  mlp = e.linear(path + ".mlp.3", mlp, /*last_axis=*/true);
  return e.op("Add", {mid, mlp}, {}, path + ".add2");
}

// PatchMerging on [N,H,W,C] of `size` -> [N,ceil(H/2),ceil(W/2),2C].
std::string swin_patch_merging(OnnxEmitter& e, const std::string& path, const std::string& x,
                               SwinOnnxSize size) {
  const std::string padded = swin_pad(e, x, size.h % 2, size.w % 2, path + ".pad");
  const std::int64_t ph = size.h + size.h % 2, pw = size.w + size.w % 2;
  std::vector<std::string> quarters;
  for (const auto& [dh, dw] : {std::pair{0, 0}, {1, 0}, {0, 1}, {1, 1}}) {
    const std::string hint = path + ".x" + std::to_string(quarters.size());
    quarters.push_back(e.op(
        "Slice",
        {padded, swin_ints(e, hint + ".starts", {dh, dw}), swin_ints(e, hint + ".ends", {ph, pw}),
         swin_ints(e, hint + ".axes", {1, 2}), swin_ints(e, hint + ".steps", {2, 2})},
        {}, hint));
  }
  const std::string merged =
      e.op("Concat", quarters, {{"axis", std::int64_t{-1}}}, path + ".concat");
  return e.linear(path + ".reduction", swin_layer_norm_at(e, path + ".norm", merged),
                  /*last_axis=*/true);
}

// The export's fixed input side (OnnxEmitter::fixed_input_size); ConfigError for a dynamic one.
SwinOnnxSize swin_input_size(OnnxEmitter& e, const std::string& arch) {
  const std::optional<std::int64_t> side = e.fixed_input_size();
  if (!side) {
    throw ConfigError("export --dynamic-size: " + arch +
                          "'s window padding, shift and attention mask are written for one "
                          "input size",
                      "export without --dynamic-size (the graph then takes data.image_size)");
  }
  return {*side, *side};
}

std::string swin_onnx_features(OnnxEmitter& e, ClassifierImpl& model, const std::string& input) {
  const SwinSpec& spec = dynamic_cast<SwinTransformerImpl&>(model).spec();
  SwinOnnxSize size = swin_input_size(e, spec.arch);
  std::string x = e.conv("features.0.0", input);  // [N,96,H/4,W/4]
  size = {(size.h - spec.patch) / spec.patch + 1, (size.w - spec.patch) / spec.patch + 1};
  x = swin_layer_norm_at(e, "features.0.2", e.transpose(x, {0, 2, 3, 1}, "features.0.1"));
  int part = 1;
  for (std::size_t s = 0; s < spec.depths.size(); ++s) {
    const std::int64_t channels = spec.embed_dim << s;
    const std::string stage = "features." + std::to_string(part++);
    for (int b = 0; b < spec.depths[s]; ++b) {
      x = swin_block(e, stage + "." + std::to_string(b), x, size, channels);
    }
    if (s + 1 == spec.depths.size()) break;
    x = swin_patch_merging(e, "features." + std::to_string(part++), x, size);
    size = {(size.h + 1) / 2, (size.w + 1) / 2};
  }
  return e.transpose(swin_layer_norm_at(e, "norm", x), {0, 3, 1, 2}, "permute");
}

}  // namespace

OnnxFamily swin_onnx() {
  OnnxFamily family;
  family.features = swin_onnx_features;
  family.linear_head = [](OnnxEmitter& e, ClassifierImpl&, const std::string& maps) {
    return e.linear("head", e.flatten(e.global_average_pool(maps)));  // avgpool, flatten, head
  };
  return family;
}

}  // namespace ltfit
