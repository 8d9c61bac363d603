// `ltfit export`'s work: see export_job.h.
#include "ltfit/jobs/export_job.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "ltfit/jobs/checkpoint_eval.h"
#include "ltfit/jobs/export_meta.h"
#include "ltfit/jobs/output_check.h"
#include "ltfit/jobs/training_setup.h"
#include "ltfit/model/torch_weights.h"

namespace ltfit {

namespace {

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

// What the export holds, for its sidecar (export_meta.h).
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
  meta.thresholds = class_thresholds(loaded.config, loaded.meta.classes.size());
  if (!meta.thresholds.empty()) meta.task = "multi_label";
  return meta;
}

}  // namespace

void run_export_job(const std::string& checkpoint, const std::string& out,
                    const std::string& weights) {
  const std::vector<CommandInput> inputs{{"the checkpoint (--checkpoint)", checkpoint}};
  check_output_not_input(out, "the state dict (--out)", inputs);
  check_output_not_input(export_meta_path(out), "the state dict's description", inputs);
  LoadedModel loaded = load_model_for_eval(checkpoint, torch::kCPU, parse_weight_choice(weights));
  const StateDict state = state_dict_of(loaded.model);
  write_torch_state_dict(out, state);
  write_export_meta(out, export_meta_of(loaded));
  std::string classes;
  for (const auto& c : loaded.meta.classes) classes += (classes.empty() ? "" : ", ") + c;
  spdlog::info("wrote {} tensors ({}, {} head, classes: {}{}) to {}, and what they are to {}",
               state.size(), loaded.config.model.arch, head_kind_name(loaded.config.model.head),
               classes, loaded.ema ? "; the weights' moving average" : "", out,
               export_meta_path(out));
}

}  // namespace ltfit
