// Pretrained ImageNet weights: torchvision's file names and URLs, the torch hub cache, the
// verified download, and copying a state dict into a Classifier body. See pretrained.h.
#include "ltfit/model/pretrained.h"
#include <algorithm>
#include <vector>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "ltfit/config/config.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/model/timm_hub.h"
#include "ltfit/model/weights_size.h"
#include "ltfit/util/download.h"
#include "ltfit/util/error.h"
#include "ltfit/util/sha256.h"

namespace ltfit {
namespace {

namespace fs = std::filesystem;

constexpr const char* kTorchvisionBaseUrl = "https://download.pytorch.org/models";
constexpr const char* kBaseUrlEnv = "LTFIT_WEIGHTS_BASE_URL";
constexpr int kMaxListedKeys = 5;

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

std::string shape_str(const torch::Tensor& t) {
  std::ostringstream out;
  out << t.sizes();
  return out.str();
}

// Number of classes of the model's new classifier (its last 2-D weight).
std::int64_t model_num_classes(Classifier& model) {
  std::int64_t classes = 0;
  for (const auto& item : model->named_parameters(/*recurse=*/true)) {
    if (item.value().dim() == 2) classes = item.value().size(0);
  }
  return classes;
}

std::string list_keys(const std::vector<std::string>& keys) {
  std::string text;
  for (size_t i = 0; i < keys.size() && i < kMaxListedKeys; ++i) {
    text += (i ? ", '" : "'") + keys[i] + "'";
  }
  if (keys.size() > kMaxListedKeys) {
    text += " and " + std::to_string(keys.size() - kMaxListedKeys) + " more";
  }
  return text;
}

}  // namespace

std::string torchvision_weights_file(const std::string& arch) {
  return arch_info(arch).weights_file;
}

std::string torchvision_weights_hash_prefix(const std::string& file_name) {
  const std::string stem = fs::path(file_name).stem().string();
  const size_t dash = stem.rfind('-');
  if (dash == std::string::npos) return "";
  const std::string prefix = stem.substr(dash + 1);
  const bool hex =
      prefix.size() >= 8 && prefix.find_first_not_of("0123456789abcdef") == std::string::npos;
  return hex ? prefix : "";
}

std::string torchvision_weights_url(const std::string& arch, const std::string& base_url) {
  std::string base = base_url.empty() ? kTorchvisionBaseUrl : base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/" + torchvision_weights_file(arch);
}

std::string torch_hub_checkpoint_dir() {
  fs::path torch_home;
  if (const std::string home = env_or_empty("TORCH_HOME"); !home.empty()) {
    torch_home = home;
  } else if (const std::string xdg = env_or_empty("XDG_CACHE_HOME"); !xdg.empty()) {
    torch_home = fs::path(xdg) / "torch";
  } else if (const std::string user_home = env_or_empty("HOME"); !user_home.empty()) {
    torch_home = fs::path(user_home) / ".cache" / "torch";
  } else {
    throw CheckpointError(
        "cannot locate the torch hub cache: TORCH_HOME, XDG_CACHE_HOME and "
        "HOME are all unset",
        "set TORCH_HOME to a writable directory");
  }
  return (torch_home / "hub" / "checkpoints").string();
}

std::string resolve_pretrained_file(const PretrainedWeights& weights, const std::string& arch) {
  LTFIT_CHECK(weights.kind != PretrainedWeights::Kind::kNone,
              "resolve_pretrained_file called for model.pretrained: none");
  if (weights.kind == PretrainedWeights::Kind::kImagenet) {
    std::string base_url = env_or_empty(kBaseUrlEnv);
    if (base_url.empty()) base_url = kTorchvisionBaseUrl;
    return fetch_cached_weights(torchvision_weights_file(arch), base_url,
                                torch_hub_checkpoint_dir());
  }
  if (weights.kind == PretrainedWeights::Kind::kTimm) {
    return fetch_timm_weights(weights.path).weights;  // build_model reads its config.json
  }
  const std::string& pretrained = weights.path;
  std::error_code ec;
  if (!fs::is_regular_file(pretrained, ec)) {
    const bool exists = fs::exists(pretrained, ec);
    throw CheckpointError(
        "model.pretrained: '" + pretrained + "' " +
            (exists ? "is not a regular file" : "does not exist"),
        "use imagenet, none, or the path of a weight file (.pth or .safetensors)");
  }
  return pretrained;
}

std::string fetch_cached_weights(const std::string& file_name, const std::string& base_url,
                                 const std::string& cache_dir) {
  const fs::path dest = fs::path(cache_dir) / file_name;
  if (fs::is_regular_file(dest)) {
    spdlog::info("using cached pretrained weights {}", dest.string());
    return dest.string();
  }
  std::string base = base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  const std::string url = base + "/" + file_name;
  const std::string prefix = torchvision_weights_hash_prefix(file_name);
  spdlog::info("downloading pretrained weights {} to {}", url, dest.string());
  DownloadOptions options;
  options.max_bytes = torchvision_weights_max_bytes(file_name);
  options.verify = [&](const std::string& partial) {
    const std::string sha = sha256_file(partial);
    if (prefix.empty() || !starts_with(sha, prefix)) {
      throw CheckpointError("the file downloaded from " + url + " has SHA-256 " + sha +
                                ", but its name expects one starting with '" + prefix +
                                "'; it was deleted",
                            "retry; if it persists, the server (" + std::string(kBaseUrlEnv) +
                                "?) serves a different file");
    }
  };
  try {
    download_file(url, dest.string(), options);
  } catch (const RuntimeError& e) {
    throw CheckpointError(std::string("cannot fetch pretrained weights: ") + e.what(),
                          "download it yourself to " + dest.string() +
                              ", or set model.pretrained to a local .pth file, or "
                              "model.pretrained: none");
  }
  return dest.string();
}

namespace {

// A buffer torch itself tolerates missing from a state dict: BatchNorm's batch counter, absent
// from files saved before torch 0.4.1 (BatchNorm's _load_from_state_dict leaves it at 0).
bool optional_buffer(const std::string& name) {
  const std::string suffix = "num_batches_tracked";
  return name.size() >= suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "N classes" of the file's classifier (its last 2-D tensor under `prefix`), or "absent".
std::string file_classes(const StateDict& state, const std::string& prefix) {
  std::string classes = "absent";
  for (const auto& [name, tensor] : state) {
    if (starts_with(name, prefix) && tensor.dim() == 2)
      classes = std::to_string(tensor.size(0)) + " classes";
  }
  return classes;
}

// The model's parameters and buffers by state-dict name.
std::vector<std::pair<std::string, torch::Tensor>> model_tensors(Classifier& model) {
  std::vector<std::pair<std::string, torch::Tensor>> targets;
  for (const auto& item : model->named_parameters(/*recurse=*/true)) {
    targets.emplace_back(item.key(), item.value());
  }
  for (const auto& item : model->named_buffers(/*recurse=*/true)) {
    targets.emplace_back(item.key(), item.value());
  }
  return targets;
}

// A weight file's tensor `src` for the model's `dst` of another shape, made to fit by the
// family's ArchInfo::adapt (ViT's position embeddings); `src` itself when it cannot be.
torch::Tensor fitted_tensor(const ArchInfo& info, const std::string& name, const torch::Tensor& src,
                            const torch::Tensor& dst) {
  if (src.sizes() == dst.sizes() || !info.adapt) return src;
  torch::Tensor fitted = info.adapt(name, src, dst);
  if (!fitted.defined() || fitted.sizes() != dst.sizes()) return src;
  spdlog::info("{} {} resampled to {}", name, shape_str(src), shape_str(dst));
  return fitted;
}

}  // namespace

void load_pretrained_body(Classifier& model, const StateDict& state, const std::string& source,
                          const std::vector<std::string>& fresh) {
  const std::string& arch = model->arch();
  const ArchInfo& info = arch_info(arch);
  const std::string& classifier = info.classifier_prefix;  // "fc.", "classifier."
  std::unordered_map<std::string, const torch::Tensor*> by_name;
  for (const auto& [name, tensor] : state) by_name[name] = &tensor;
  const auto targets = model_tensors(model);
  const bool fastai_head = model->has_fastai_head();

  // Validate everything first, so a bad file leaves the model untouched.
  std::vector<std::pair<torch::Tensor, torch::Tensor>> copies;
  std::unordered_set<std::string> model_names;
  bool classifier_replaced = fastai_head;
  for (const auto& [name, dst] : targets) {
    model_names.insert(name);
    if (fastai_head && starts_with(name, "head.")) continue;  // fastai's head is always new
    if (std::find(fresh.begin(), fresh.end(), name) != fresh.end()) continue;
    const auto it = by_name.find(name);
    if (it == by_name.end()) {
      if (optional_buffer(name)) continue;
      throw CheckpointError("'" + source + "' has no tensor '" + name + "' (model.pretrained)",
                            "model.pretrained must hold torchvision " + arch + " weights");
    }
    const torch::Tensor src = fitted_tensor(info, name, *it->second, dst);
    if (src.sizes() != dst.sizes()) {
      if (starts_with(name, classifier)) {  // the usual 1000-class classifier: replaced
        classifier_replaced = true;
        continue;
      }
      throw CheckpointError("'" + source + "': tensor '" + name + "' has shape " + shape_str(src) +
                                ", the " + arch + " model expects " + shape_str(dst) +
                                " (model.pretrained)",
                            "is it a " + arch + " weight file?");
    }
    copies.emplace_back(dst, src);
  }
  std::vector<std::string> unexpected;
  for (const auto& [name, tensor] : state) {
    if (model_names.count(name)) continue;
    if (fastai_head && starts_with(name, classifier)) continue;
    unexpected.push_back(name);
  }
  if (!unexpected.empty()) {
    throw CheckpointError("'" + source + "' has " + std::to_string(unexpected.size()) +
                              " tensor(s) the " + arch +
                              " model does not: " + list_keys(unexpected) + " (model.pretrained)",
                          "is it a " + arch + " weight file?");
  }

  torch::NoGradGuard no_grad;
  for (auto& [dst, src] : copies) dst.copy_(src);
  if (classifier_replaced) {
    spdlog::info("classifier {}* ({}) replaced by the new head for {} classes", classifier,
                 file_classes(state, classifier), model_num_classes(model));
  }
  for (const std::string& name : fresh) spdlog::info("{} keeps its initialisation", name);
  spdlog::info("loaded {} pretrained tensors from {}", copies.size(), source);
}

namespace {

constexpr const char* kFastaiHeadLast = "head.6.weight";  // fastai head's last Linear

std::vector<std::string> state_keys(const StateDict& state) {
  std::vector<std::string> keys;
  for (const auto& [name, tensor] : state) keys.push_back(name);
  return keys;
}

// The checks of load_state_dict_strict: what is missing, unexpected or of another shape.
std::string strict_mismatch(Classifier& model, const StateDict& state, const std::string& arch,
                            std::vector<std::pair<torch::Tensor, const torch::Tensor*>>& copies) {
  std::unordered_map<std::string, const torch::Tensor*> by_name;
  for (const auto& [name, tensor] : state) by_name[name] = &tensor;
  std::vector<std::string> missing, shapes;
  std::unordered_set<std::string> model_names;
  auto visit = [&](const std::string& name, const torch::Tensor& dst) {
    model_names.insert(name);
    const auto it = by_name.find(name);
    if (it == by_name.end()) {
      if (!optional_buffer(name)) missing.push_back(name);
    } else if (it->second->sizes() != dst.sizes()) {
      shapes.push_back(name + " " + shape_str(*it->second) + " (model: " + shape_str(dst) + ")");
    } else {
      copies.emplace_back(dst, it->second);
    }
  };
  for (const auto& item : model->named_parameters(/*recurse=*/true))
    visit(item.key(), item.value());
  for (const auto& item : model->named_buffers(/*recurse=*/true)) visit(item.key(), item.value());
  std::vector<std::string> unexpected;
  for (const auto& [name, tensor] : state) {
    if (!model_names.count(name)) unexpected.push_back(name);
  }
  std::string why;
  const auto add = [&](const std::vector<std::string>& keys, const std::string& what) {
    if (keys.empty()) return;
    why += (why.empty() ? "" : "; ") + std::to_string(keys.size()) + " " + what + ": " +
           list_keys(keys);
  };
  add(missing, "tensor(s) the " + arch + " model has and the file lacks");
  add(unexpected, "tensor(s) the model does not have");
  add(shapes, "tensor(s) of another shape");
  return why;
}

}  // namespace

WeightsHead weights_head(const StateDict& state, const std::string& arch,
                         const std::string& source) {
  const std::string classifier = arch_info(arch).classifier_prefix;
  WeightsHead head;
  for (const auto& [name, tensor] : state) {
    if (name == kFastaiHeadLast) head.kind = HeadKind::kFastai;  // swin_t's own is head.*
  }
  for (const auto& [name, tensor] : state) {
    const bool last = head.kind == HeadKind::kFastai
                          ? name == kFastaiHeadLast
                          : starts_with(name, classifier) && tensor.dim() == 2;
    if (last && tensor.dim() == 2) head.num_classes = tensor.size(0);
  }
  if (head.num_classes > 0) return head;
  throw CheckpointError(
      "'" + source + "' holds neither fastai's head (" + kFastaiHeadLast + ") nor " + arch +
          "'s torchvision classifier (" + classifier +
          "*); its tensors: " + list_keys(state_keys(state)),
      "give a torchvision " + arch + " .pth or an `ltfit export` of a " + arch + " checkpoint");
}

void load_state_dict_strict(Classifier& model, const StateDict& state, const std::string& source) {
  std::vector<std::pair<torch::Tensor, const torch::Tensor*>> copies;
  const std::string why = strict_mismatch(model, state, model->arch(), copies);
  if (!why.empty()) {
    throw CheckpointError("'" + source + "' does not fit a " + model->arch() + " with a " +
                              (model->has_fastai_head() ? "fastai" : "linear") + " head: " + why,
                          "is it a " + model->arch() + " weight file (--arch)?");
  }
  torch::NoGradGuard no_grad;
  for (auto& [dst, src] : copies) dst.copy_(*src);
  spdlog::info("loaded {} tensors from {}", copies.size(), source);
}

}  // namespace ltfit
