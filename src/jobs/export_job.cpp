// `ltfit export`'s work: see export_job.h.
#include "ltfit/jobs/export_job.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "ltfit/formats/safetensors.h"
#include "ltfit/jobs/checkpoint_eval.h"
#include "ltfit/jobs/export_meta.h"
#include "ltfit/jobs/output_check.h"
#include "ltfit/jobs/training_setup.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/model/onnx_export.h"
#include "ltfit/model/torch_weights.h"
#include "ltfit/util/atomic_file.h"
#include "ltfit/util/json.h"
#include "ltfit/util/sha256.h"

namespace ltfit {

namespace {

namespace fs = std::filesystem;

// Parameters and buffers in PyTorch's state_dict order: module by module, each module's own
// parameters, then its own buffers.
StateDict state_dict_of(Classifier& model) {
  StateDict state;
  for (const auto& item : model->named_modules()) {
    const std::string prefix = item.key().empty() ? "" : item.key() + ".";
    for (const auto& p : item.value()->named_parameters(/*recurse=*/false)) {
      state.emplace_back(prefix + p.key(), p.value().detach());
    }
    for (const auto& b : item.value()->named_buffers(/*recurse=*/false)) {
      state.emplace_back(prefix + b.key(), b.value().detach());
    }
  }
  return state;
}

// What the export holds, for its sidecar (export_meta.h) and the ONNX metadata.
ExportMeta export_meta_of(const LoadedModel& loaded) {
  ExportMeta meta;
  meta.arch = loaded.config.model.arch;
  meta.stem = stem_name(loaded.config.model.stem);
  meta.head = head_kind_name(loaded.config.model.head);
  meta.classes = loaded.meta.classes;
  meta.feature_channels = loaded.model->feature_channels();
  meta.dropout = loaded.config.model.dropout;
  meta.normalization = loaded.model->input_normalization();
  meta.image_size = loaded.config.data.image_size;
  meta.resize_method = resize_method_name(loaded.config.data.resize_method);
  meta.pad_mode = pad_mode_name(loaded.config.data.pad_mode);
  meta.thresholds = class_thresholds(loaded.config, loaded.meta.classes.size());
  if (!meta.thresholds.empty()) meta.task = "multi_label";
  return meta;
}

std::string class_list(const std::vector<std::string>& classes) {
  std::string text;
  for (const auto& c : classes) text += (text.empty() ? "" : ", ") + c;
  return text;
}

// The state dict as a torch.save zip (.pth) or a safetensors file, with its description beside it
// (and, in a safetensors file, in its metadata too).
void export_weights(const ExportRequest& request, LoadedModel& loaded, ExportFormat format) {
  const StateDict state = state_dict_of(loaded.model);
  const ExportMeta meta = export_meta_of(loaded);
  if (format == ExportFormat::kSafetensors) {
    write_file_atomic(request.out, safetensors_bytes(state, {{"format", "pt"},
                                                             {"ltfit", export_meta_json(meta)}}));
  } else {
    write_torch_state_dict(request.out, state);
  }
  write_export_meta(request.out, meta);
  spdlog::info("wrote {} tensors ({}, {} head, classes: {}{}) to {}, and what they are to {}",
               state.size(), loaded.config.model.arch, head_kind_name(loaded.config.model.head),
               class_list(loaded.meta.classes), loaded.ema ? "; the weights' moving average" : "",
               request.out, export_meta_path(request.out));
}

// The model's facts as ONNX metadata_props: flat keys for a deployer, and the whole export
// description (export_meta.h's JSON) under "ltfit".
std::vector<std::pair<std::string, std::string>> onnx_metadata(const ExportRequest& request,
                                                               const LoadedModel& loaded,
                                                               const ExportMeta& meta) {
  const nlohmann::json classes = meta.classes;
  const nlohmann::json thresholds = meta.thresholds;
  const nlohmann::json mean = meta.normalization.mean, std = meta.normalization.std;
  const nlohmann::json transform = {{"resize", meta.image_size},
                                    {"crop", meta.image_size},
                                    {"interpolation", meta.interpolation},
                                    {"method", meta.resize_method},
                                    {"pad_mode", meta.pad_mode}};
  return {
      {"arch", meta.arch},
      {"stem", meta.stem},
      {"head", meta.head},
      {"task", meta.task},
      {"classes", classes.dump()},
      {"thresholds", thresholds.dump()},
      {"temperature", fmt::format("{}", loaded.config.eval.temperature)},
      {"image_size", std::to_string(meta.image_size)},
      {"eval_transform", transform.dump()},
      {"mean", mean.dump()},
      {"std", std.dump()},
      {"input", request.preprocess
                    ? "image: uint8 [batch, height, width, 3] RGB, normalised inside"
                    : "input: float32 [batch, 3, height, width], RGB, (pixel / 255 - "
                      "mean) / std"},
      {"outputs", request.probabilities ? std::string("logits, probabilities (") +
                                              (meta.task == "multi_label" ? "sigmoid" : "softmax") +
                                              " of logits / temperature)"
                                        : std::string("logits")},
      {"weights", loaded.ema ? "ema" : "model"},
      {"ltfit_version", LTFIT_VERSION},
      {"source_checkpoint", fs::path(request.checkpoint).filename().string()},
      {"source_checkpoint_sha256", sha256_file(request.checkpoint)},
      {"ltfit", export_meta_json(meta)},
  };
}

void export_onnx_file(const ExportRequest& request, LoadedModel& loaded) {
  const ExportMeta meta = export_meta_of(loaded);
  OnnxExportOptions options;
  options.opset = request.opset;
  options.image_size = meta.image_size;
  options.dynamic_size = request.dynamic_size;
  options.probabilities = request.probabilities;
  options.multi_label = meta.task == "multi_label";
  options.temperature = loaded.config.eval.temperature;
  options.preprocess = request.preprocess;
  options.metadata = onnx_metadata(request, loaded, meta);
  options.producer_version = LTFIT_VERSION;
  options.doc =
      "ltfit " + meta.arch + " (" + meta.head + " head), classes: " + class_list(meta.classes);
  loaded.model->eval();
  const onnx::WrittenModel written =
      export_onnx(*loaded.model, arch_info(meta.arch),
                  static_cast<std::int64_t>(meta.classes.size()), options, request.out);
  spdlog::info("wrote {} ({}, {} head, {}, opset {}, {:.1f} MB{}; classes: {}{}{}{})", request.out,
               meta.arch, meta.head, meta.task, request.opset, written.bytes / 1e6,
               written.external_data.empty() ? "" : ", weights in " + written.external_data,
               class_list(meta.classes), loaded.ema ? "; the weights' moving average" : "",
               request.dynamic_size ? "; dynamic height and width" : "",
               request.preprocess ? "; uint8 NHWC input, normalised inside" : "");
}

}  // namespace

ExportFormat resolve_export_format(const ExportRequest& request) {
  ExportFormat format = ExportFormat::kAuto;
  if (request.format == "onnx") {
    format = ExportFormat::kOnnx;
  } else if (request.format == "pth") {
    format = ExportFormat::kPth;
  } else if (request.format == "safetensors") {
    format = ExportFormat::kSafetensors;
  } else if (request.format != "auto") {
    throw ConfigError("--format: expected onnx, pth, safetensors or auto, got '" + request.format +
                      "'");
  } else {
    const std::string ext = fs::path(request.out).extension().string();
    if (ext == ".onnx") {
      format = ExportFormat::kOnnx;
    } else if (ext == ".safetensors") {
      format = ExportFormat::kSafetensors;
    } else {
      format = ExportFormat::kPth;  // .pth, .pt, and (as before ONNX) any other name
      if (ext != ".pth" && ext != ".pt") {
        spdlog::info("--out {}: writing a state dict (.pth); --format onnx writes ONNX",
                     request.out);
      }
    }
  }
  const bool onnx_options =
      request.dynamic_size || request.probabilities || request.preprocess || request.opset != 17;
  if (format != ExportFormat::kOnnx && onnx_options) {
    throw ConfigError(
        "--opset, --dynamic-size, --probabilities and --preprocess are for ONNX "
        "exports, and this one writes a state dict (.pth or .safetensors)",
        "name the output .onnx, or pass --format onnx");
  }
  if (format == ExportFormat::kOnnx) check_onnx_opset(request.opset);
  return format;
}

void run_export_job(const ExportRequest& request) {
  const ExportFormat format = resolve_export_format(request);
  const std::vector<CommandInput> inputs{{"the checkpoint (--checkpoint)", request.checkpoint}};
  if (format == ExportFormat::kOnnx) {
    check_output_not_input(request.out, "the ONNX model (--out)", inputs);
    check_output_not_input(request.out + ".data", "the ONNX model's external data", inputs);
  } else {
    check_output_not_input(request.out, "the state dict (--out)", inputs);
    check_output_not_input(export_meta_path(request.out), "the state dict's description", inputs);
  }
  LoadedModel loaded =
      load_model_for_eval(request.checkpoint, torch::kCPU, parse_weight_choice(request.weights));
  if (format == ExportFormat::kOnnx) {
    export_onnx_file(request, loaded);
  } else {
    export_weights(request, loaded, format);
  }
}

}  // namespace ltfit
