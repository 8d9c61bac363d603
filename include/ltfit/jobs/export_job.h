// `ltfit export`: a checkpoint's weights (load_model_for_eval) as
//   - a torch.save state dict that Python's torch.load reads and that loads strictly into
//     torchvision's model (linear head) or torchvision's body plus fastai's head, with its
//     description beside it (export_meta.h: arch, head, classes, normalisation, eval transform);
//   - the same tensors as a safetensors file (Hugging Face's format: safetensors.torch.load_file
//     reads it), its description also in the file's metadata ("ltfit");
//   - or an ONNX model (model/onnx_export.h) that ONNX Runtime, TensorRT or OpenVINO run without
//     Python: logits (and optionally probabilities at eval.temperature), a dynamic batch axis,
//     optionally dynamic height and width and the preprocessing inside, and the model's facts in
//     its metadata_props.
// docs/export.md. Not thread-safe.
#pragma once

#include <string>

namespace ltfit {

enum class ExportFormat { kAuto, kPth, kSafetensors, kOnnx };

struct ExportRequest {
  std::string checkpoint;
  std::string out;
  std::string weights = "auto";  // --weights: auto | ema | model
  std::string format =
      "auto";                  // --format: auto (from --out's extension) | pth | safetensors | onnx
  int opset = 17;              // ONNX only
  bool dynamic_size = false;   // ONNX only: dynamic height and width
  bool probabilities = false;  // ONNX only: a probabilities output
  bool preprocess = false;     // ONNX only: uint8 NHWC RGB input, normalised inside
};

// The format `request` asks for: --format, else --out's extension (.onnx: ONNX; .safetensors:
// safetensors; any other: a torch.save state dict, as before ONNX). ConfigError (exit 2) for an
// unknown --format, ONNX-only flags with pth, or an opset ltfit does not write.
ExportFormat resolve_export_format(const ExportRequest& request);

// Writes the export and logs what it wrote. ConfigError (exit 2), before anything is read, when
// an output is the checkpoint (check_output_not_input) or the format or an ONNX option is not
// one ltfit writes; CheckpointError (exit 4) for a checkpoint that cannot be read; RuntimeError
// (exit 5) for an output that cannot be written (nothing half-written is left behind).
// `weights`: the checkpoint's moving average of the weights (train.ema) or its trained weights;
// auto: the average when it has one.
void run_export_job(const ExportRequest& request);

}  // namespace ltfit
