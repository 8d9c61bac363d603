// `ltfit export`: a checkpoint's weights as a torch.save state dict that Python's torch.load and
// torchvision's ResNet (for a linear head) read.
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "commands.h"
#include "ltfit/config/config_loader.h"
#include "ltfit/model/resnet.h"
#include "ltfit/model/torch_weights.h"
#include "ltfit/train/checkpoint.h"

namespace ltfit::cli {

namespace {

// Parameters and buffers in PyTorch's state_dict order: module by module, each module's own
// parameters, then its own buffers.
StateDict state_dict_of(ResNet& model) {
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

void run_export(const std::string& checkpoint, const std::string& out) {
  const CheckpointMeta meta = read_checkpoint_meta(checkpoint);
  const Config config = load_config_from_string(meta.config_yaml, checkpoint + " (config)");
  ResNet model(resnet_spec(config.model.arch), static_cast<std::int64_t>(meta.classes.size()),
               parse_head_kind(config.model.head), config.model.dropout);
  load_checkpoint(checkpoint, model, nullptr);
  const StateDict state = state_dict_of(model);
  write_torch_state_dict(out, state);
  std::string classes;
  for (const auto& c : meta.classes) classes += (classes.empty() ? "" : ", ") + c;
  spdlog::info("wrote {} tensors ({}, {} head, classes: {}) to {}", state.size(), config.model.arch,
               config.model.head, classes, out);
}

}  // namespace

void add_export_command(CLI::App& app, int* exit_code) {
  auto checkpoint = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "export", "write a checkpoint's weights as a state dict for Python's torch.load");
  cmd->add_option("--checkpoint", *checkpoint, "checkpoint file (.ckpt)")->required();
  cmd->add_option("--out", *out, "state dict to write (.pth)")->required();
  cmd->callback([checkpoint, out, exit_code] {
    run_export(*checkpoint, *out);
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
