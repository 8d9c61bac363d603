// `ltfit export`: a checkpoint's weights as a torch.save state dict for Python (with FILE.json
// beside it saying what it holds), or as an ONNX model for runtimes without Python
// (jobs/export_job.h).
#include <CLI/CLI.hpp>

#include "commands.h"
#include "ltfit/jobs/export_job.h"
#include "ltfit/util/signals.h"

namespace ltfit::cli {

void add_export_command(CLI::App& app, int* exit_code) {
  auto request = std::make_shared<ExportRequest>();
  CLI::App* cmd = app.add_subcommand(
      "export",
      "write a checkpoint's weights as an ONNX model (FILE.onnx: ONNX Runtime, TensorRT, "
      "OpenVINO; no Python) or as a state dict (FILE.pth for Python's torch.load, "
      "FILE.safetensors for Hugging Face's safetensors) with FILE.json beside it (docs/export.md)");
  cmd->add_option("--checkpoint", request->checkpoint, "checkpoint file (.ckpt)")->required();
  cmd->add_option("--out", request->out, "file to write: .onnx, .pth (.pt) or .safetensors")
      ->required();
  cmd->add_option("--format", request->format,
                  "onnx | pth | safetensors; auto (default): from --out's extension");
  cmd->add_option("--weights", request->weights,
                  "ema: the moving average of the weights (train.ema); model: the trained "
                  "weights; auto (default): the average when the checkpoint has one");
  cmd->add_option("--opset", request->opset, "ONNX: the opset, 17 (default) to 21");
  cmd->add_flag("--dynamic-size", request->dynamic_size,
                "ONNX: height and width as dynamic axes (the batch always is)");
  cmd->add_flag("--probabilities", request->probabilities,
                "ONNX: a second output, softmax (sigmoid for multi-label) of the logits divided "
                "by the checkpoint's eval.temperature");
  cmd->add_flag("--preprocess", request->preprocess,
                "ONNX: the input is uint8 [N,H,W,3] RGB at the eval size, normalised inside the "
                "graph");
  cmd->callback([request, exit_code] {
    StopSignals signals(StopMode::kExitNow);  // nothing to save: exit 130, temporaries removed
    run_export_job(*request);
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
