// timm's weights from the Hugging Face hub (timm_hub.h).
#include "ltfit/model/timm_hub.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "ltfit/model/pretrained.h"
#include "ltfit/util/download.h"
#include "ltfit/util/error.h"
#include "ltfit/util/hub_name.h"
#include "ltfit/util/input_file.h"
#include "ltfit/util/sha256.h"

namespace ltfit {

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxApiBytes = 4u << 20;     // the repo's file list
constexpr std::size_t kMaxConfigBytes = 1u << 20;  // config.json

std::string env_text(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

std::string endpoint() {
  std::string base = env_text("HF_ENDPOINT");
  if (base.empty()) base = "https://huggingface.co";
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base;
}

// The snapshot of `repo` (a models--timm--<name> folder) holding model.safetensors: refs/main's,
// else the first by name; "" when none.
std::string cached_snapshot(const fs::path& repo) {
  std::error_code ec;
  if (!fs::is_directory(repo / "snapshots", ec)) return "";
  if (fs::is_regular_file(repo / "refs" / "main", ec)) {
    std::string commit = read_input_file((repo / "refs" / "main").string(), "refs/main", 256);
    commit.erase(std::remove_if(commit.begin(), commit.end(), ::isspace), commit.end());
    if (!commit.empty() && commit.find('/') == std::string::npos && commit != "." &&
        commit != ".." &&
        fs::is_regular_file(repo / "snapshots" / commit / "model.safetensors", ec)) {
      return (repo / "snapshots" / commit).string();
    }
  }
  std::vector<fs::path> found;
  for (const auto& entry : fs::directory_iterator(repo / "snapshots", ec)) {
    if (fs::is_regular_file(entry.path() / "model.safetensors", ec)) found.push_back(entry.path());
  }
  std::sort(found.begin(), found.end());
  return found.empty() ? "" : found.front().string();
}

// model.safetensors' SHA-256 and size from the hub's file list of timm/<name>.
std::pair<std::string, std::int64_t> published_file(const std::string& name, const fs::path& dir) {
  const std::string url = endpoint() + "/api/models/timm/" + name + "/revision/main?blobs=true";
  const std::string listing = (dir / "api.json").string();
  DownloadOptions options;
  options.show_progress = false;
  options.max_bytes = kMaxApiBytes;
  try {
    download_file(url, listing, options);
  } catch (const RuntimeError& e) {
    throw CheckpointError("model.pretrained: timm/" + name + ": the hub's file list (" + url +
                              ") could not be read: " + e.what(),
                          "check the name on https://huggingface.co/timm, or put the repo in "
                          "the Hugging Face cache (huggingface-cli download timm/" +
                              name + ")");
  }
  const std::string text = read_input_file(listing, "the hub's file list", kMaxApiBytes);
  fs::remove(listing);
  nlohmann::json files;
  try {
    files = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError("model.pretrained: timm/" + name + ": " + url + " is not JSON");
  }
  if (files.is_object() && files.contains("siblings") && files["siblings"].is_array()) {
    for (const auto& f : files["siblings"]) {
      if (!f.is_object() || f.value("rfilename", "") != "model.safetensors") continue;
      if (f.contains("lfs") && f["lfs"].is_object() && f["lfs"].contains("sha256") &&
          f["lfs"]["sha256"].is_string() && f["lfs"].contains("size") &&
          f["lfs"]["size"].is_number_unsigned()) {
        return {f["lfs"]["sha256"].get<std::string>(), f["lfs"]["size"].get<std::int64_t>()};
      }
    }
  }
  throw CheckpointError("model.pretrained: timm/" + name +
                        ": the hub lists no model.safetensors with its SHA-256 (" + url + ")");
}

TimmFiles download_timm(const std::string& name, const fs::path& dir) {
  fs::create_directories(dir);
  const auto [sha256, size] = published_file(name, dir);
  const std::string base = endpoint() + "/timm/" + name + "/resolve/main/";
  spdlog::info("downloading timm/{} ({:.1f} MB) to {}", name, static_cast<double>(size) / 1e6,
               dir.string());
  DownloadOptions options;
  options.max_bytes = size;
  options.verify = [&sha = sha256, &name](const std::string& partial) {
    if (sha256_file(partial) != sha) {
      throw CheckpointError("model.pretrained: timm/" + name +
                            ": model.safetensors does not match the SHA-256 the hub lists");
    }
  };
  try {
    download_file(base + "model.safetensors", (dir / "model.safetensors").string(), options);
    DownloadOptions small;
    small.show_progress = false;
    small.max_bytes = kMaxConfigBytes;
    download_file(base + "config.json", (dir / "config.json").string(), small);
  } catch (const RuntimeError& e) {
    throw CheckpointError("model.pretrained: timm/" + name + ": " + e.what());
  }
  return {(dir / "model.safetensors").string(), (dir / "config.json").string()};
}

}  // namespace

std::string hf_hub_cache_dir() {
  if (const std::string cache = env_text("HF_HUB_CACHE"); !cache.empty()) return cache;
  if (const std::string home = env_text("HF_HOME"); !home.empty()) return home + "/hub";
  if (const std::string xdg = env_text("XDG_CACHE_HOME"); !xdg.empty()) {
    return xdg + "/huggingface/hub";
  }
  if (const std::string home = env_text("HOME"); !home.empty()) {
    return home + "/.cache/huggingface/hub";
  }
  throw CheckpointError(
      "cannot locate the Hugging Face cache: HF_HUB_CACHE, HF_HOME, "
      "XDG_CACHE_HOME and HOME are all unset",
      "set HF_HOME to a writable directory");
}

TimmFiles fetch_timm_weights(const std::string& name) {
  LTFIT_CHECK(valid_hub_model_name(name), "fetch_timm_weights called with an unchecked name");
  const fs::path repo = fs::path(hf_hub_cache_dir()) / ("models--timm--" + name);
  if (const std::string snapshot = cached_snapshot(repo); !snapshot.empty()) {
    spdlog::info("timm/{}: the Hugging Face cache's {}", name, snapshot);
    const fs::path config = fs::path(snapshot) / "config.json";
    std::error_code ec;
    return {(fs::path(snapshot) / "model.safetensors").string(),
            fs::is_regular_file(config, ec) ? config.string() : ""};
  }
  const fs::path ours = fs::path(torch_hub_checkpoint_dir()) / ("timm--" + name);
  std::error_code ec;
  if (fs::is_regular_file(ours / "model.safetensors", ec) &&
      fs::is_regular_file(ours / "config.json", ec)) {
    spdlog::info("timm/{}: using cached {}", name, (ours / "model.safetensors").string());
    return {(ours / "model.safetensors").string(), (ours / "config.json").string()};
  }
  return download_timm(name, ours);
}

namespace {

// timm's model names ("architecture" in config.json) whose model is a torchvision architecture
// of another name, module for module (the rest share torchvision's names: resnet50,
// convnext_tiny, efficientnet_b0). timm's regnety_008 is absent on purpose: its stage widths are
// not regnet_y_800mf's (timm_names.h).
constexpr std::pair<const char*, const char*> kTimmArchitectures[] = {
    {"regnety_008_tv", "regnet_y_800mf"},
    {"regnety_016", "regnet_y_1_6gf"},
    {"mobilenetv3_large_100", "mobilenet_v3_large"},
    {"mobilenetv3_small_100", "mobilenet_v3_small"},
    {"vit_base_patch16_224", "vit_b_16"},
};

// The ltfit arch of timm's `architecture`: kTimmArchitectures' entry, else the same name.
std::string timm_architecture_arch(const std::string& architecture) {
  for (const auto& [timm, ours] : kTimmArchitectures) {
    if (architecture == timm) return ours;
  }
  return architecture;
}

// ConfigError unless timm's config.json (`config`) names a model of `arch`.
void check_timm_architecture(const nlohmann::json& config, const ArchInfo& arch,
                             const std::string& name) {
  const std::string architecture =
      config.is_object() && config.contains("architecture") && config["architecture"].is_string()
          ? config["architecture"].get<std::string>()
          : "";
  if (!architecture.empty() && timm_architecture_arch(architecture) == arch.name) return;
  std::string hint =
      "set model.arch to the weights' architecture, or choose timm weights of model.arch";
  if (architecture == "regnety_008") {
    hint =
        "timm's regnety_008 is not torchvision's regnet_y_800mf (pycls' stage widths): for "
        "regnet_y_800mf choose timm/regnety_008_tv.tv2_in1k";
  }
  const std::string ours = timm_architecture_arch(architecture);
  throw ConfigError("model.pretrained: timm/" + name + " holds a " +
                        (architecture.empty() ? std::string("model of no named architecture")
                                              : "'" + architecture + "'") +
                        (ours != architecture ? " (ltfit's " + ours + ")" : "") +
                        ", and model.arch is '" + arch.name + "'",
                    hint);
}

// pretrained_cfg[key] as 3 finite numbers (each > 0 when `positive`); nullopt when not stated.
std::optional<std::array<float, 3>> timm_triple(const nlohmann::json& cfg, const char* key,
                                                bool positive, const std::string& path) {
  if (!cfg.contains(key) || cfg[key].is_null()) return std::nullopt;
  const nlohmann::json& values = cfg[key];
  std::array<float, 3> out{};
  bool good = values.is_array() && values.size() == 3;
  for (std::size_t c = 0; good && c < 3; ++c) {
    good = values[c].is_number() && std::isfinite(values[c].get<double>()) &&
           std::abs(values[c].get<double>()) <= 1e3 && (!positive || values[c].get<double>() > 0);
    if (good) out[c] = values[c].get<float>();
  }
  if (!good) {
    throw CheckpointError(path + ": pretrained_cfg." + key + " is " + values.dump() +
                          ", not 3 finite numbers" + (positive ? " above 0" : ""));
  }
  return out;
}

// pretrained_cfg's input_size ([3, S, S]), crop_pct and interpolation into `out`.
void read_timm_eval(const nlohmann::json& cfg, const std::string& path, TimmDataConfig& out) {
  if (const auto& size = cfg.value("input_size", nlohmann::json()); !size.is_null()) {
    const bool square = size.is_array() && size.size() == 3 && size[1].is_number_integer() &&
                        size[1] == size[2] && size[1].get<std::int64_t>() >= 16 &&
                        size[1].get<std::int64_t>() <= 4096;
    if (!square) {
      throw CheckpointError(path + ": pretrained_cfg.input_size is " + size.dump() +
                            ", not [3, S, S] with S from 16 to 4096");
    }
    out.input_size = size[1].get<int>();
  }
  if (const auto& crop = cfg.value("crop_pct", nlohmann::json()); !crop.is_null()) {
    if (!crop.is_number() || !(crop.get<double>() >= 0.05 && crop.get<double>() <= 1.0)) {
      throw CheckpointError(path + ": pretrained_cfg.crop_pct is " + crop.dump() +
                            ", not a number from 0.05 to 1");
    }
    out.crop_pct = crop.get<double>();
  }
  const std::string interpolation = cfg.value("interpolation", std::string());
  if (interpolation == "bilinear" || interpolation == "bicubic") out.interpolation = interpolation;
}

}  // namespace

namespace {

// config.json at `path`, parsed; CheckpointError naming `name` and the file when it is not JSON.
nlohmann::json parsed_timm_config(const std::string& path, const std::string& name) {
  try {
    return nlohmann::json::parse(read_input_file(path, "timm's config.json", kMaxConfigBytes));
  } catch (const nlohmann::json::exception&) {
    throw CheckpointError("timm/" + name + ": " + path + " is not JSON");
  }
}

// What `config` (read from `path`) says for `arch`, its architecture checked.
TimmDataConfig timm_data_of(const nlohmann::json& config, const std::string& path,
                            const ArchInfo& arch, const std::string& name) {
  check_timm_architecture(config, arch, name);
  TimmDataConfig out;
  const nlohmann::json cfg = config.value("pretrained_cfg", nlohmann::json::object());
  if (!cfg.is_object()) return out;
  const auto mean = timm_triple(cfg, "mean", false, path);
  const auto std = timm_triple(cfg, "std", true, path);
  if (mean || std) {
    ImageNormalization n = arch.normalization;
    if (mean) n.mean = *mean;
    if (std) n.std = *std;
    out.normalization = n;
  }
  read_timm_eval(cfg, path, out);
  return out;
}

}  // namespace

TimmDataConfig read_timm_config(const std::string& config_path, const ArchInfo& arch,
                                const std::string& name) {
  if (config_path.empty()) return {};
  return timm_data_of(parsed_timm_config(config_path, name), config_path, arch, name);
}

std::optional<TimmDataConfig> timm_config_beside(const std::string& weights, const ArchInfo& arch,
                                                 const std::string& name) {
  const fs::path path = fs::path(weights).parent_path() / "config.json";
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return std::nullopt;
  const nlohmann::json config = parsed_timm_config(path.string(), name);
  if (!config.is_object() || !config.contains("pretrained_cfg")) return std::nullopt;
  return timm_data_of(config, path.string(), arch, name);
}

}  // namespace ltfit
