// Fixtures the jobs tests share, generated at run time: a tiny config and a checkpoint written
// from it. Header-only (the test build compiles *_test.cpp files).
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <string>

#include "ltfit/config/config.h"
#include "ltfit/config/config_loader.h"
#include "ltfit/model/classifier.h"
#include "ltfit/model/model_factory.h"
#include "ltfit/model/torch_weights.h"
#include "ltfit/train/checkpoint.h"

namespace ltfit::testing {

// A config for a resnet18 with a linear head, 32 px, batch 4, on the CPU, reading `data` and
// writing runs under `out` as run `tiny`.
inline std::string tiny_job_config(const std::filesystem::path& data,
                                   const std::filesystem::path& out) {
  return "run: {name: tiny, out_dir: \"" + out.string() + "\", seed: 5}\n" + "data: {root: \"" +
         data.string() + "\", image_size: 32, batch_size: 4, workers: 1}\n" +
         "model: {arch: resnet18, pretrained: none, head: linear}\n" +
         "train: {recipe: one_cycle, epochs: 1, lr: 2.0e-3, device: cpu}\n" +
         "eval: {tta: false}\n";
}

// A checkpoint at `path` of a randomly initialised model of `config_yaml`'s model for classes
// cat, dog (seeded: the same every call); returns that model, in eval mode.
inline Classifier write_job_checkpoint(const std::filesystem::path& path,
                                       const std::string& config_yaml) {
  const Config config = load_config_from_string(config_yaml, "test config");
  torch::manual_seed(11);
  Classifier model = build_model(config.model, 2);
  CheckpointMeta meta;
  meta.config_yaml = config_yaml;
  meta.classes = {"cat", "dog"};
  std::filesystem::create_directories(path.parent_path());
  save_checkpoint(path.string(), model, nullptr, meta);
  model->eval();
  return model;
}

// Every parameter and buffer of `model` under its state-dict name (as a torchvision file).
inline StateDict state_dict_of(Classifier& model) {
  StateDict state;
  for (const auto& p : model->named_parameters()) state.emplace_back(p.key(), p.value().detach());
  for (const auto& b : model->named_buffers()) state.emplace_back(b.key(), b.value().detach());
  return state;
}

}  // namespace ltfit::testing
