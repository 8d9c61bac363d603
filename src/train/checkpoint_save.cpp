// Writing checkpoints (checkpoint.h): save_checkpoint's torch.save archive (the metadata dict, the
// hooks' states, the model's tensors, the optimizer state and the generators' states, in that
// order), capture_rng_states, and save_optimizer_state's snapshot; checkpoint.cpp reads them back.
#include "ltfit/train/checkpoint.h"

#include <array>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "ltfit/formats/pickle.h"
#include "ltfit/formats/torch_archive.h"
#include "ltfit/run/timing.h"
#include "ltfit/util/error.h"
#include "train/checkpoint_format.h"
#include "train/optimizer_state.h"

namespace ltfit {

namespace {

// "key": value pairs of the dict being written.
struct DictEntries {
  pickle::PickleWriter& w;
  void integer(const char* key, std::int64_t v) const {
    w.string(key);
    w.integer(v);
  }
  void real(const char* key, double v) const {
    w.string(key);
    w.real(v);
  }
  void integers(const char* key, const std::vector<std::int64_t>& list) const {
    w.string(key);
    w.empty_list();
    w.mark();
    for (const std::int64_t v : list) w.integer(v);
    w.appends();
  }
};

// Where the run is: phase seconds, decode failures, the position and the fp16 scaler's state.
void write_progress(pickle::PickleWriter& w, const CheckpointMeta& meta) {
  const DictEntries e{w};
  w.string("phase_seconds");  // {phase name: seconds}
  w.empty_dict();
  w.mark();
  for (int i = 0; i < kPhaseCount; ++i)
    e.real(phase_name(static_cast<Phase>(i)), meta.phase_seconds[i]);
  w.set_items();
  w.string("decode_failures");  // {"left_out": [position, ...], "found": [...]}
  w.empty_dict();
  w.mark();
  e.integers("left_out", meta.decode_failures.left_out);
  e.integers("found", meta.decode_failures.found);
  w.set_items();
  const TrainPosition& p = meta.position;
  w.string("position");
  w.empty_dict();
  w.mark();
  e.integer("stage", p.stage);
  e.integer("epoch_in_stage", p.epoch_in_stage);
  e.integer("batch_in_epoch", p.batch_in_epoch);
  e.real("loss_avg", p.loss_avg);
  e.integer("loss_count", p.loss_count);
  w.set_items();
  w.string("scaler");  // the keys of torch.amp.GradScaler.state_dict() that ltfit keeps
  w.empty_dict();
  w.mark();
  e.real("scale", meta.scaler.scale);
  e.integer("_growth_tracker", meta.scaler.growth_tracker);
  w.set_items();
}

void write_meta(pickle::PickleWriter& w, const CheckpointMeta& meta) {
  const DictEntries e{w};
  w.string("format");
  w.string(detail::kCheckpointFormatName);
  w.string("format_version");
  w.integer(detail::kCheckpointFormatVersion);
  w.string("config_yaml");
  w.string(meta.config_yaml);
  w.string("classes");
  w.empty_list();
  w.mark();
  for (const std::string& c : meta.classes) w.string(c);
  w.appends();
  e.integer("epochs_done", meta.epochs_done);
  e.integer("global_step", meta.global_step);
  e.real("accuracy", meta.accuracy);
  e.real("valid_loss", meta.valid_loss);
  e.real("best_accuracy", meta.best_accuracy);
  e.real("train_seconds", meta.train_seconds);
  write_progress(w, meta);
}

// The model's input normalization ({"mean": [3 floats], "std": [3 floats]}): the arch's, or the
// pretrained weights' own (timm's config.json), restored with the weights.
void write_input_normalization(pickle::PickleWriter& w, const ImageNormalization& n) {
  const auto three = [&w](const char* key, const std::array<float, 3>& values) {
    w.string(key);
    w.empty_list();
    w.mark();
    for (const float v : values) w.real(v);
    w.appends();
  };
  w.string("input_normalization");
  w.empty_dict();
  w.mark();
  three("mean", n.mean);
  three("std", n.std);
  w.set_items();
}

// Parameters, then buffers, as an OrderedDict of tensors.
void write_model(TorchArchiveWriter& out, Classifier& model) {
  pickle::PickleWriter& w = out.pickle();
  write_input_normalization(w, model->input_normalization());
  w.string("model");
  w.global("collections", "OrderedDict");
  w.empty_tuple();
  w.reduce();
  w.mark();
  for (const auto& item : model->named_parameters()) {
    w.string(item.key());
    out.tensor(item.value());
  }
  for (const auto& item : model->named_buffers()) {
    w.string(item.key());
    out.tensor(item.value());
  }
  w.set_items();
}

void write_rng(TorchArchiveWriter& out, const RngStates& rng) {
  pickle::PickleWriter& w = out.pickle();
  w.string("rng");
  w.empty_dict();
  w.mark();
  w.string("cpu");
  out.tensor(rng.cpu);
  w.string("cuda");
  w.empty_list();
  w.mark();
  for (const torch::Tensor& state : rng.cuda) out.tensor(state);
  w.appends();
  w.set_items();
}

// `hook_states`: {name: {"version": int, "tensors": {key: tensor}, "scalars": {key: float}}}.
void write_hook_states(TorchArchiveWriter& out, const std::vector<HookState>& states) {
  pickle::PickleWriter& w = out.pickle();
  w.string("hook_states");
  w.empty_dict();
  w.mark();
  for (const HookState& state : states) {
    w.string(state.name);
    w.empty_dict();
    w.mark();
    w.string("version");
    w.integer(state.version);
    w.string("tensors");
    w.empty_dict();
    w.mark();
    for (const auto& [key, tensor] : state.tensors) {
      w.string(key);
      out.tensor(tensor);
    }
    w.set_items();
    w.string("scalars");
    w.empty_dict();
    w.mark();
    for (const auto& [key, value] : state.scalars) {
      w.string(key);
      w.real(value);
    }
    w.set_items();
    w.set_items();
  }
  w.set_items();
}

}  // namespace

RngStates capture_rng_states() {
  RngStates states;
  auto cpu = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(cpu.mutex());
    states.cpu = cpu.get_state();
  }
  if (torch::cuda::is_available()) {
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(torch::cuda::device_count()); ++i) {
      auto gen = at::globalContext().defaultGenerator(at::Device(at::kCUDA, i));
      std::lock_guard<std::mutex> lock(gen.mutex());
      states.cuda.push_back(gen.get_state());
    }
  }
  return states;
}

void save_checkpoint(const std::string& path, Classifier& model, torch::optim::Optimizer* optimizer,
                     const CheckpointMeta& meta) {
  save_checkpoint(path, model, optimizer, meta, capture_rng_states());
}

void save_checkpoint(const std::string& path, Classifier& model, torch::optim::Optimizer* optimizer,
                     const CheckpointMeta& meta, const RngStates& rng) {
  TorchArchiveWriter out;
  pickle::PickleWriter& w = out.pickle();
  w.empty_dict();
  w.mark();
  write_meta(w, meta);
  write_hook_states(out, meta.hook_states);
  write_model(out, model);
  w.string("optimizer_type");
  w.string(optimizer ? detail::optimizer_type(*optimizer) : "none");
  w.string("optimizer");
  if (optimizer) {
    detail::write_optimizer_state(out, *optimizer);
  } else {
    w.none();
  }
  write_rng(out, rng);
  w.set_items();
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) {
    throw RuntimeError("cannot create the folder of checkpoint '" + path + "': " + ec.message(),
                       "check the permissions of the run directory");
  }
  out.write_file(path);
}

std::string save_optimizer_state(torch::optim::Optimizer& optimizer) {
  TorchArchiveWriter out;
  detail::write_optimizer_state(out, optimizer);
  return out.to_bytes();
}

}  // namespace ltfit
