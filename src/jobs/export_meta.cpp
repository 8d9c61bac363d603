// The sidecar of an exported weight file: see export_meta.h.
#include "ltfit/jobs/export_meta.h"

#include <spdlog/spdlog.h>

#include <spdlog/fmt/fmt.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "ltfit/config/config_enums.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/util/atomic_file.h"
#include "ltfit/util/error.h"
#include "ltfit/util/input_file.h"
#include "ltfit/util/json.h"

namespace ltfit {

namespace {

constexpr const char* kFormat = "ltfit-export";
constexpr int kVersion = 1;

nlohmann::ordered_json head_json(const ExportMeta& m) {
  if (m.head != "fastai") return {{"kind", m.head}};
  // fastai's head after AdaptiveConcatPool2d ([max, avg], flattened) of a feature map, or on a
  // token's embedding as it is (ViT), under `head.<index>`.
  const bool map = arch_info(m.arch).feature_layout == FeatureLayout::kMap;
  const std::int64_t in = map ? 2 * m.feature_channels : m.feature_channels;
  const std::int64_t hidden = m.head_hidden;
  return {{"kind", "fastai"},
          {"pooling", map ? "cat([adaptive_max_pool2d(x, 1), adaptive_avg_pool2d(x, 1)], 1)"
                            ".flatten(1)"
                          : "none: x is the class token's embedding [N, C]"},
          {"layers",
           {fmt::format("BatchNorm1d({})", in), fmt::format("Dropout({:g})", m.dropout / 2),
            fmt::format("Linear({}, {})", in, hidden), "ReLU()",
            fmt::format("BatchNorm1d({})", hidden), fmt::format("Dropout({:g})", m.dropout),
            fmt::format("Linear({}, {})", hidden, m.classes.size())}}};
}

// The eval transform's sides take data.image_size's range (config_rules.cpp): an export predicts
// at a size its training could have used, and a hand-edited file cannot ask for gigabytes a batch.
constexpr int kMinTransformSide = 16;
constexpr int kMaxTransformSide = 4096;

int transform_side(const nlohmann::json& transform, const std::string& key) {
  const nlohmann::json& value = transform.at(key);
  const double side = value.is_number_integer() ? value.get<double>() : 0.0;
  if (side < kMinTransformSide || side > kMaxTransformSide) {
    throw std::invalid_argument("eval_transform." + key + ": expected an integer from " +
                                std::to_string(kMinTransformSide) + " to " +
                                std::to_string(kMaxTransformSide) +
                                " (the range of data.image_size), got " + value.dump());
  }
  return static_cast<int>(side);
}

// eval_transform's `key`, one of the names `parse` takes (`expected` lists them); `absent` when
// missing.
template <typename Parse>
std::string transform_choice(const nlohmann::json& transform, const std::string& key,
                             const char* expected, const std::string& absent, Parse parse) {
  if (!transform.contains(key)) return absent;
  const nlohmann::json& value = transform.at(key);
  try {
    if (value.is_string()) {
      parse(value.get<std::string>());
      return value.get<std::string>();
    }
  } catch (const ConfigError&) {  // said below, as the other fields' range errors are
  }
  throw std::invalid_argument("eval_transform." + key + ": expected " + expected + ", got " +
                              value.dump());
}

// eval_transform's crop (ExportMeta::image_size), resize, interpolation, method and pad mode,
// range-checked.
void parse_eval_transform(const nlohmann::json& transform, ExportMeta& m) {
  m.image_size = transform_side(transform, "crop");
  m.eval_resize = transform.contains("resize") ? transform_side(transform, "resize") : m.image_size;
  if (m.image_size > m.eval_resize) {
    throw std::invalid_argument("eval_transform.crop (" + std::to_string(m.image_size) +
                                ") is larger than eval_transform.resize (" +
                                std::to_string(m.eval_resize) +
                                "): the centre crop must lie within the resized image");
  }
  m.resize_method =
      transform_choice(transform, "method", "crop, squish or pad", "crop", parse_resize_method);
  m.pad_mode = transform_choice(transform, "pad_mode", "reflection, zeros or border", "reflection",
                                parse_pad_mode);
  if (!transform.contains("interpolation")) return;
  const nlohmann::json& interpolation = transform.at("interpolation");
  if (interpolation != "bilinear" && interpolation != "bicubic") {
    throw std::invalid_argument("eval_transform.interpolation: expected bilinear or bicubic, got " +
                                interpolation.dump());
  }
  m.interpolation = interpolation.get<std::string>();
}

[[noreturn]] void malformed(const std::string& path, const std::string& why) {
  throw CheckpointError("'" + path + "' is not the description of an ltfit export: " + why,
                        "remove it, or export the checkpoint again (ltfit export)");
}

ExportMeta parse_meta(const nlohmann::json& j) {
  ExportMeta m;
  m.arch = j.at("arch").get<std::string>();
  m.stem = j.value("stem", m.stem);
  if (m.stem != "imagenet" && m.stem != "cifar") {
    throw std::invalid_argument("stem must be imagenet or cifar");
  }
  m.head = j.at("head").at("kind").get<std::string>();
  for (const auto& c : j.at("classes"))
    m.classes.push_back(unescape_json_string(c.get<std::string>()));
  m.feature_channels = j.at("feature_channels").get<std::int64_t>();
  m.head_hidden = j.value("head_hidden", m.head_hidden);
  m.dropout = j.value("dropout", 0.0);
  m.normalization.mean = j.at("normalization").at("mean").get<std::array<float, 3>>();
  m.normalization.std = j.at("normalization").at("std").get<std::array<float, 3>>();
  for (int c = 0; c < 3; ++c) {
    if (!std::isfinite(m.normalization.mean[c]) || !std::isfinite(m.normalization.std[c]) ||
        !(m.normalization.std[c] > 0)) {
      throw std::invalid_argument(
          "normalization: expected 3 finite means and 3 finite standard "
          "deviations above 0");
    }
  }
  parse_eval_transform(j.at("eval_transform"), m);
  m.task = j.value("task", m.task);
  if (m.task != "single_label" && m.task != "multi_label") {
    throw std::invalid_argument("task must be single_label or multi_label");
  }
  if (j.contains("thresholds")) m.thresholds = j.at("thresholds").get<std::vector<double>>();
  if (m.task == "multi_label" && m.thresholds.size() != m.classes.size()) {
    throw std::invalid_argument("a multi_label export needs one threshold per class");
  }
  return m;
}

}  // namespace

std::string export_meta_path(const std::string& weights) {
  std::filesystem::path path(weights);
  if (path.extension() == ".pth" || path.extension() == ".safetensors") {
    return path.replace_extension(".json").string();
  }
  return weights + ".json";
}

std::string export_meta_json(const ExportMeta& m) {
  const nlohmann::ordered_json j = {
      {"format", kFormat},
      {"version", kVersion},
      {"arch", m.arch},
      {"stem", m.stem},
      {"head", head_json(m)},
      {"num_classes", m.classes.size()},
      {"classes", m.classes},
      {"feature_channels", m.feature_channels},
      {"head_hidden", m.head_hidden},
      {"dropout", m.dropout},
      {"normalization", {{"mean", m.normalization.mean}, {"std", m.normalization.std}}},
      // ltfit's validation transform: `method` crop is the centre square of the shorter side
      // resized to crop x crop (OpenCV's area filter when shrinking, bilinear when enlarging;
      // torchvision's Resize(resize) + CenterCrop(crop) is its nearest equivalent), squish the
      // whole image, pad the longer side's square with the outside filled by `pad_mode`.
      {"eval_transform",
       {{"resize", m.eval_resize > m.image_size ? m.eval_resize : m.image_size},
        {"crop", m.image_size},
        {"interpolation", m.interpolation},
        {"method", m.resize_method},
        {"pad_mode", m.pad_mode}}},
      {"task", m.task},
      {"thresholds", m.thresholds},
  };
  return dump_json(j) + "\n";
}

void write_export_meta(const std::string& weights, const ExportMeta& meta) {
  write_text_atomic(export_meta_path(weights), export_meta_json(meta));
}

std::optional<ExportMeta> read_export_meta(const std::string& weights) {
  const std::string path = export_meta_path(weights);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  std::string text;
  try {
    text = read_input_file(path, "description of the weight file");
  } catch (const ConfigError& e) {
    throw CheckpointError(e.what(), e.hint());
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  // A file of that name that does not say it is an export's description is someone else's (a
  // torchvision reference's logits, notes): ignored, said so. One that says so must be whole.
  const bool ours = !j.is_discarded() && j.is_object() && j.contains("format") &&
                    j["format"].is_string() && j["format"].get<std::string>() == kFormat;
  if (!ours) {
    spdlog::warn("{} is not the description of an ltfit export (no \"format\": \"{}\"): ignored",
                 path, kFormat);
    return std::nullopt;
  }
  try {
    if (j.value("version", 0) != kVersion)
      malformed(path, "its \"version\" is not " + std::to_string(kVersion));
    return parse_meta(j);
  } catch (const nlohmann::json::exception& e) {
    malformed(path, e.what());
  } catch (const std::invalid_argument& e) {
    malformed(path, e.what());
  }
}

}  // namespace ltfit
