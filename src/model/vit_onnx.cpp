// The ViT family as ONNX (vit.h, onnx_emitter.h): the patch embedding, the class token joined to
// the patch tokens, the position embeddings resampled for the export's fixed size (a constant),
// each block's LayerNorm, self-attention (MatMul, Softmax, MatMul per head) and MLP (exact GELU),
// the final LayerNorm and the class token's row; torchvision's `heads.head` on it.
#include <torch/torch.h>

#include <cmath>

#include "ltfit/model/vit.h"
#include "ltfit/util/error.h"

namespace ltfit {
namespace {

torch::Tensor int64s(std::vector<std::int64_t> values) {
  return torch::tensor(values, torch::kLong);
}

// [N,L,C] -> [N,L,C]: softmax(q k^T / sqrt(D)) v over `heads` heads, then out_proj.
std::string vit_attention(OnnxEmitter& e, const std::string& path, const std::string& x) {
  auto& attention = e.module_as<SelfAttentionImpl>(path);
  const std::int64_t dim = attention.in_proj_weight.size(1);
  const std::int64_t heads = attention.heads();
  const std::string weight_t =
      e.op("Transpose", {e.tensor(path + ".in_proj_weight")},
           {{"perm", std::vector<std::int64_t>{1, 0}}}, path + ".in_proj_t");
  std::string qkv =
      e.op("Add",
           {e.op("MatMul", {x, weight_t}, {}, path + ".in_proj"), e.tensor(path + ".in_proj_bias")},
           {}, path + ".in_proj_add");
  qkv =
      e.op("Reshape", {qkv, e.constant(path + ".qkv_shape", int64s({0, 0, 3, heads, dim / heads}))},
           {}, path + ".qkv");
  qkv = e.transpose(qkv, {2, 0, 3, 1, 4}, path + ".qkv_heads");  // [3,N,heads,L,D]
  const auto part = [&](std::int64_t i, const char* name) {
    return e.op("Gather", {qkv, e.constant(path + ".index", torch::tensor(i, torch::kLong))},
                {{"axis", std::int64_t{0}}}, path + "." + name);
  };
  const std::string q = part(0, "q"), k = part(1, "k"), v = part(2, "v");
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(dim / heads)));
  std::string scores =
      e.op("MatMul", {q, e.transpose(k, {0, 1, 3, 2}, path + ".k_t")}, {}, path + ".scores");
  scores = e.op("Mul", {scores, e.constant(path + ".scale", torch::tensor(scale))}, {},
                path + ".scaled");
  const std::string weights =
      e.op("Softmax", {scores}, {{"axis", std::int64_t{-1}}}, path + ".softmax");
  std::string out = e.op("MatMul", {weights, v}, {}, path + ".attended");  // [N,heads,L,D]
  out = e.op("Reshape",
             {e.transpose(out, {0, 2, 1, 3}, path + ".tokens"),
              e.constant(path + ".merge_shape", int64s({0, 0, dim}))},
             {}, path + ".merged");
  return e.linear(path + ".out_proj", out, /*last_axis=*/true);
}

std::string vit_block(OnnxEmitter& e, const std::string& path, const std::string& x) {
  auto& block = e.module_as<EncoderBlockImpl>(path);
  std::string h = e.layer_norm(path + ".ln_1", block.ln_1->options.eps(), x);
  const std::string y = e.op("Add", {vit_attention(e, path + ".self_attention", h), x}, {},
                             path + ".attention_residual");
  h = e.layer_norm(path + ".ln_2", block.ln_2->options.eps(), y);
  h = e.linear(path + ".mlp.3",
               e.gelu(e.linear(path + ".mlp.0", h, /*last_axis=*/true), path + ".mlp.1"),
               /*last_axis=*/true);
  return e.op("Add", {h, y}, {}, path + ".mlp_residual");
}

// [N,3,H,W] -> [N,1+h*w,C]: the patch tokens after the class token, plus position embeddings.
std::string vit_tokens(OnnxEmitter& e, VisionTransformerImpl& vit, const std::string& x) {
  const std::optional<std::int64_t> size = e.fixed_input_size();
  if (!size) {
    throw ConfigError(vit.arch() +
                          " is exported at one image size: its position embeddings are "
                          "resampled for the patch grid at export time",
                      "export without --dynamic-size (the graph then takes data.image_size)");
  }
  const ViTSpec& spec = vit.spec();
  if (*size % spec.patch != 0) {
    throw ConfigError("--image-size " + std::to_string(*size) + " is not a multiple of " +
                          vit.arch() + "'s " + std::to_string(spec.patch) + "-pixel patches",
                      "choose a multiple of " + std::to_string(spec.patch));
  }
  const std::string patches = e.conv("conv_proj", x);  // [N,C,h,w]
  const std::string flat = e.transpose(
      e.op("Reshape", {patches, e.constant("patches.shape", int64s({0, spec.hidden, -1}))}, {},
           "patches.flat"),
      {0, 2, 1}, "patches.tokens");  // [N,h*w,C]
  const std::string batch =
      e.op("Slice",
           {e.op("Shape", {flat}, {}, "patches.shape_of"), e.constant("batch.start", int64s({0})),
            e.constant("batch.end", int64s({1}))},
           {}, "batch");
  const std::string cls_shape =
      e.op("Concat", {batch, e.constant("class_token.tail", int64s({1, spec.hidden}))},
           {{"axis", std::int64_t{0}}}, "class_token.shape");
  const std::string cls = e.op("Expand", {e.tensor("class_token"), cls_shape}, {}, "class_tokens");
  const std::string tokens = e.op("Concat", {cls, flat}, {{"axis", std::int64_t{1}}}, "tokens");
  const std::int64_t grid = *size / spec.patch;
  const torch::Tensor pos =
      resample_position_embedding(vit.encoder()->pos_embedding.detach(), grid, grid);
  return e.op("Add", {tokens, e.constant("encoder.pos_embedding", pos.to(torch::kFloat))}, {},
              "encoder.embedded");
}

std::optional<std::string> vit_module(OnnxEmitter& e, const std::string& path, torch::nn::Module& m,
                                      const std::string& x) {
  if (dynamic_cast<EncoderBlockImpl*>(&m) != nullptr) return vit_block(e, path, x);
  if (dynamic_cast<StochasticDepthImpl*>(&m) != nullptr) return x;
  return std::nullopt;
}

}  // namespace

OnnxFamily vit_onnx() {
  OnnxFamily family;
  family.custom = vit_module;
  family.features = [](OnnxEmitter& e, ClassifierImpl& model, const std::string& x) {
    auto& vit = dynamic_cast<VisionTransformerImpl&>(model);
    std::string tokens = vit_tokens(e, vit, x);
    for (std::size_t i = 0; i < vit.encoder()->blocks.size(); ++i) {
      tokens = vit_block(e, "encoder.layers.encoder_layer_" + std::to_string(i), tokens);
    }
    tokens = e.layer_norm("encoder.ln", vit.encoder()->ln->options.eps(), tokens);
    return e.op("Gather", {tokens, e.constant("class_token.index", torch::tensor(0, torch::kLong))},
                {{"axis", std::int64_t{1}}}, "class_token.out");  // [N,C]
  };
  family.linear_head = [](OnnxEmitter& e, ClassifierImpl&, const std::string& tokens) {
    return e.linear("heads.head", tokens);
  };
  return family;
}

}  // namespace ltfit
