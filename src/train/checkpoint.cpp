// Reading checkpoints (checkpoint.h): read_checkpoint_meta, load_checkpoint(_from_bytes) and
// load_optimizer_state. A file is opened with the restricted archive reader, its format and every
// metadata field checked, and every tensor (model, optimizer, generators) checked against the
// objects it goes into before any of them is changed; checkpoint_save.cpp writes the files.
#include "ltfit/train/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "ltfit/formats/pickle.h"
#include "ltfit/formats/torch_archive.h"
#include "ltfit/run/timing.h"
#include "ltfit/util/error.h"
#include "train/checkpoint_fields.h"
#include "train/checkpoint_format.h"
#include "train/optimizer_state.h"

namespace ltfit {

namespace {

using detail::CheckpointFields;
using Value = pickle::PickleValue;
using Kind = Value::Kind;

std::string convert_hint(const std::string& path) {
  return "a checkpoint written by ltfit before format 3 is such an archive; if you made this "
         "file yourself, convert it once: ltfit convert-checkpoint --trust-code " +
         path + " NEW.ckpt";
}

TorchArchive open_checkpoint(const std::string& path) {
  return load_torch_archive(path, "checkpoint", convert_hint(path));
}

TorchArchive open_checkpoint(std::string_view bytes, const std::string& name,
                             const ReadLimits& limits) {
  return load_torch_archive(std::make_shared<const std::string>(bytes), "checkpoint", name,
                            convert_hint(name), limits);
}

void check_format(const CheckpointFields& f, const Value& root) {
  if (root.kind != Kind::kDict || pickle::find_entry(root, "format") == nullptr ||
      f.text(root, "format", "") != detail::kCheckpointFormatName) {
    throw CheckpointError("'" + f.file() +
                              "' is not an ltfit checkpoint (a torch.save file "
                              "without ltfit's 'format' entry)",
                          "a weight file (.pth) goes to predict --weights or model.pretrained");
  }
  const std::int64_t version = f.integer(root, "format_version", "");
  if (version != detail::kCheckpointFormatVersion) {
    throw CheckpointError(
        "checkpoint '" + f.file() + "' has format version " + std::to_string(version) +
            "; this ltfit reads version " + std::to_string(detail::kCheckpointFormatVersion),
        version > detail::kCheckpointFormatVersion ? "use the ltfit that wrote it, or a newer one"
                                                   : convert_hint(f.file()));
  }
}

// `phase_seconds`, optional (files written before ltfit kept it have none): unknown phase names
// are ignored, missing ones stay 0.
void read_phase_seconds(const CheckpointFields& f, const Value& root, PhaseSeconds& out) {
  const Value* phases = pickle::find_entry(root, "phase_seconds");
  if (phases == nullptr) return;
  f.of_kind(*phases, Kind::kDict, "phase_seconds");
  for (int i = 0; i < kPhaseCount; ++i) {
    const char* name = phase_name(static_cast<Phase>(i));
    if (pickle::find_entry(*phases, name) == nullptr) continue;
    out[i] = f.real(*phases, name, "phase_seconds");
    if (!(out[i] >= 0.0)) f.fail(std::string("phase_seconds.") + name, "is not a duration");
  }
}

// `decode_failures`, optional (none in files written before ltfit kept it): two lists of
// ascending, non-negative sample positions.
void read_decode_failures(const CheckpointFields& f, const Value& root, DecodeFailures& out) {
  const Value* failures = pickle::find_entry(root, "decode_failures");
  if (failures == nullptr) return;
  f.of_kind(*failures, Kind::kDict, "decode_failures");
  const auto read = [&](const char* key, std::vector<std::int64_t>& list) {
    const Value& items = f.of_kind(f.at(*failures, key, "decode_failures"), Kind::kList,
                                   std::string("decode_failures.") + key);
    list.reserve(items.items.size());
    for (const auto& item : items.items) {
      const std::int64_t position =
          f.of_kind(*item, Kind::kInt, std::string("decode_failures.") + key).integer;
      if (position < 0 || (!list.empty() && position <= list.back())) {
        f.fail(std::string("decode_failures.") + key, "is not an ascending list of positions");
      }
      list.push_back(position);
    }
  };
  read("left_out", out.left_out);
  read("found", out.found);
}

// One dict of a hook state, {key: value}, read by `read` into `out` (keys unique, non-empty).
template <typename T, typename Read>
void read_state_dict(const CheckpointFields& f, const Value& dict, const std::string& path,
                     std::map<std::string, T>& out, Read read) {
  f.of_kind(dict, Kind::kDict, path);
  for (const auto& [key, value] : dict.entries) {
    const std::string& name = f.of_kind(*key, Kind::kString, path).text;
    if (name.empty() || out.count(name) != 0) f.fail(path, "has an empty or repeated key");
    out.emplace(name, read(*value, path + "." + name));
  }
}

// `hook_states`, optional (none in files written before ltfit kept it).
void read_hook_states(const CheckpointFields& f, const Value& root, std::vector<HookState>& out) {
  const Value* states = pickle::find_entry(root, "hook_states");
  if (states == nullptr) return;
  f.of_kind(*states, Kind::kDict, "hook_states");
  std::set<std::string_view> names;  // a hostile file may hold many: no quadratic search
  for (const auto& [key, value] : states->entries) {
    HookState state;
    state.name = f.of_kind(*key, Kind::kString, "hook_states").text;
    const std::string path = "hook_states." + state.name;
    if (state.name.empty() || !names.insert(key->text).second) {
      f.fail("hook_states", "has an empty or repeated name");
    }
    state.version = f.integer(*value, "version", path);
    read_state_dict(f, f.at(*value, "tensors", path), path + ".tensors", state.tensors,
                    [&f](const Value& v, const std::string& key_path) {
                      return f.of_kind(v, Kind::kTensor, key_path).tensor.clone();
                    });
    read_state_dict(
        f, f.at(*value, "scalars", path), path + ".scalars", state.scalars,
        [&f](const Value& v, const std::string& key_path) { return f.number(v, key_path); });
    out.push_back(std::move(state));
  }
}

CheckpointMeta read_meta(const CheckpointFields& f, const Value& root) {
  check_format(f, root);
  CheckpointMeta meta;
  meta.config_yaml = f.text(root, "config_yaml", "");
  const Value& classes = f.of_kind(f.at(root, "classes", ""), Kind::kList, "classes");
  for (const auto& c : classes.items)
    meta.classes.push_back(f.of_kind(*c, Kind::kString, "classes").text);
  meta.epochs_done = f.small_int(root, "epochs_done", "");
  meta.global_step = f.integer(root, "global_step", "");
  if (meta.global_step < 0) f.fail("global_step", "is negative");
  meta.accuracy = f.real(root, "accuracy", "");
  meta.valid_loss = f.real(root, "valid_loss", "");
  meta.best_accuracy = f.real(root, "best_accuracy", "");
  meta.train_seconds = f.real(root, "train_seconds", "");
  read_phase_seconds(f, root, meta.phase_seconds);
  read_decode_failures(f, root, meta.decode_failures);
  read_hook_states(f, root, meta.hook_states);
  const Value* optimizer_type = pickle::find_entry(root, "optimizer_type");
  meta.weights_only = optimizer_type != nullptr && optimizer_type->kind == Kind::kString &&
                      optimizer_type->text == "none";
  const Value& p = f.at(root, "position", "");
  meta.position.stage = f.small_int(p, "stage", "position");
  meta.position.epoch_in_stage = f.small_int(p, "epoch_in_stage", "position");
  meta.position.batch_in_epoch = f.integer(p, "batch_in_epoch", "position");
  meta.position.loss_avg = f.real(p, "loss_avg", "position");
  meta.position.loss_count = f.integer(p, "loss_count", "position");
  if (meta.position.batch_in_epoch < 0 || meta.position.loss_count < 0) {
    f.fail("position", "holds a negative count");
  }
  const Value& s = f.at(root, "scaler", "");
  meta.scaler.scale = f.real(s, "scale", "scaler");
  meta.scaler.growth_tracker = f.integer(s, "_growth_tracker", "scaler");
  return meta;
}

// Checks every parameter and buffer of `model` against the saved tensors; returns the copies.
std::vector<std::pair<torch::Tensor, torch::Tensor>> stage_model(const CheckpointFields& f,
                                                                 const Value& root,
                                                                 Classifier& model) {
  const Value& saved = f.of_kind(f.at(root, "model", ""), Kind::kDict, "model");
  std::unordered_map<std::string_view, const Value*> by_name;
  for (const auto& [key, value] : saved.entries) {
    if (key->kind == Kind::kString) by_name[key->text] = value.get();
  }
  std::vector<std::pair<torch::Tensor, torch::Tensor>> copies;
  const auto stage = [&](const std::string& name, const torch::Tensor& target) {
    const auto it = by_name.find(name);
    if (it == by_name.end()) {
      throw CheckpointError("checkpoint '" + f.file() + "' has no tensor '" + name + "'",
                            "was it saved for another model.arch?");
    }
    const torch::Tensor& source = f.of_kind(*it->second, Kind::kTensor, "model." + name).tensor;
    if (source.sizes() != target.sizes()) {
      throw CheckpointError("checkpoint '" + f.file() + "': '" + name + "' has shape " +
                            c10::str(source.sizes()) + ", the model expects " +
                            c10::str(target.sizes()));
    }
    if (source.scalar_type() != target.scalar_type()) {
      throw CheckpointError("checkpoint '" + f.file() + "': '" + name + "' is " +
                            std::string(c10::toString(source.scalar_type())) +
                            ", the model expects " +
                            std::string(c10::toString(target.scalar_type())));
    }
    copies.emplace_back(target, source);
    by_name.erase(it);
  };
  for (auto& item : model->named_parameters()) stage(item.key(), item.value());
  for (auto& item : model->named_buffers()) stage(item.key(), item.value());
  if (!by_name.empty()) {  // as load_state_dict(strict=True): "Unexpected key(s)"
    std::vector<std::string> sorted;
    for (const auto& [name, value] : by_name) sorted.emplace_back(name);
    std::sort(sorted.begin(), sorted.end());
    std::string names;
    for (std::size_t i = 0; i < sorted.size() && i < 5; ++i) names += (i ? ", " : "") + sorted[i];
    if (sorted.size() > 5) names += " and " + std::to_string(sorted.size() - 5) + " more";
    throw CheckpointError(
        "checkpoint '" + f.file() + "' has tensors the model does not have: " + names,
        "was it saved for another model.arch or model.head?");
  }
  return copies;
}

torch::Tensor rng_state(const CheckpointFields& f, const Value& v, const std::string& key_path) {
  const torch::Tensor& t = f.of_kind(v, Kind::kTensor, key_path).tensor;
  if (t.scalar_type() != torch::kUInt8 || t.dim() != 1 || t.numel() > (1 << 20)) {
    f.fail(key_path, "is not a generator state (a 1-D uint8 tensor)");
  }
  return t.clone();
}

// Checks the saved generator states; returns what sets the global generators to them.
std::function<void()> stage_rng(const CheckpointFields& f, const Value& root) {
  const Value& rng = f.at(root, "rng", "");
  RngStates states;
  states.cpu = rng_state(f, f.at(rng, "cpu", "rng"), "rng.cpu");
  at::make_generator<at::CPUGeneratorImpl>().set_state(states.cpu);  // throws if malformed
  const Value& cuda = f.of_kind(f.at(rng, "cuda", "rng"), Kind::kList, "rng.cuda");
  for (std::size_t i = 0; i < cuda.items.size(); ++i) {
    states.cuda.push_back(rng_state(f, *cuda.items[i], "rng.cuda[" + std::to_string(i) + "]"));
  }
  return [states] {
    auto cpu = at::detail::getDefaultCPUGenerator();
    {
      std::lock_guard<std::mutex> lock(cpu.mutex());
      cpu.set_state(states.cpu);
    }
    if (!torch::cuda::is_available()) return;
    const auto devices = static_cast<std::size_t>(torch::cuda::device_count());
    for (std::size_t i = 0; i < devices && i < states.cuda.size(); ++i) {
      auto gen = at::globalContext().defaultGenerator(at::Device(at::kCUDA, int(i)));
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(states.cuda[i]);
    }
  };
}

// Runs `body`, turning a LibTorch error (a generator refusing a state of the wrong size) into a
// CheckpointError naming the file.
template <typename Body>
auto checked(const std::string& path, Body body) {
  try {
    return body();
  } catch (const Error&) {
    throw;
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    throw CheckpointError("checkpoint '" + path + "': " + what.substr(0, what.find('\n')),
                          "use another checkpoint (checkpoints/last.ckpt or best.ckpt)");
  }
}

// `input_normalization` (optional: files written before ltfit kept it hold the arch's), checked:
// 3 finite means, 3 finite standard deviations above 0.
std::optional<ImageNormalization> read_input_normalization(const CheckpointFields& f,
                                                           const Value& root) {
  const Value* saved = pickle::find_entry(root, "input_normalization");
  if (saved == nullptr) return std::nullopt;
  f.of_kind(*saved, Kind::kDict, "input_normalization");
  ImageNormalization n;
  for (const auto& [key, values] : {std::pair{"mean", &n.mean}, {"std", &n.std}}) {
    const std::string path = std::string("input_normalization.") + key;
    const Value& list = f.of_kind(f.at(*saved, key, "input_normalization"), Kind::kList, path);
    if (list.items.size() != 3) f.fail(path, "does not hold 3 numbers");
    for (std::size_t c = 0; c < 3; ++c) {
      const double v = f.number(*list.items[c], path);
      const bool is_std = std::string_view(key) == "std";
      if (!std::isfinite(v) || std::abs(v) > 1e3 || (is_std && !(v > 0))) {
        f.fail(path, is_std ? "holds a value that is not a finite number above 0"
                            : "holds a value that is not a finite number");
      }
      (*values)[c] = static_cast<float>(v);
    }
  }
  return n;
}

// Checks everything in `archive` against the model (and optimizer), then loads it.
CheckpointMeta load_into(const TorchArchive& archive, const std::string& path, Classifier& model,
                         torch::optim::Optimizer* optimizer, bool restore_rng) {
  const CheckpointFields f(path);
  const Value& root = archive.root();
  CheckpointMeta meta = read_meta(f, root);
  return checked(path, [&] {
    const auto copies = stage_model(f, root, model);
    const std::optional<ImageNormalization> normalization = read_input_normalization(f, root);
    std::function<void()> set_optimizer, set_rng;
    if (optimizer) {
      const std::string saved_type = f.text(root, "optimizer_type", "");
      if (meta.weights_only) throw weights_only_error(path);
      if (saved_type != detail::optimizer_type(*optimizer)) {
        throw CheckpointError("checkpoint '" + path + "' holds the state of a " + saved_type +
                                  " optimizer, this run uses " + detail::optimizer_type(*optimizer),
                              "resume with the checkpoint's own config");
      }
      set_optimizer =
          detail::stage_optimizer_state(f, f.at(root, "optimizer", ""), "optimizer", *optimizer);
    }
    if (restore_rng) set_rng = stage_rng(f, root);
    // Everything checked: change the model, the optimizer and the generators.
    {
      torch::NoGradGuard no_grad;
      for (auto& [target, source] : copies) target.copy_(source);
    }
    if (normalization) model->set_input_normalization(*normalization);
    if (set_optimizer) set_optimizer();
    if (set_rng) set_rng();
    return meta;
  });
}

}  // namespace

CheckpointError weights_only_error(const std::string& path) {
  return CheckpointError(
      "checkpoint '" + path +
          "' holds weights only (no optimizer state): a run cannot continue "
          "from it",
      "continue the run from its checkpoints/last.ckpt, or start a new run from these weights: "
      "ltfit train --init-from " +
          path + " [--config FILE] [--set key=value]...");
}

CheckpointMeta read_checkpoint_meta(const std::string& path) {
  return read_meta(CheckpointFields(path), open_checkpoint(path).root());
}

CheckpointMeta load_checkpoint(const std::string& path, Classifier& model,
                               torch::optim::Optimizer* optimizer, bool restore_rng) {
  return load_into(open_checkpoint(path), path, model, optimizer, restore_rng);
}

CheckpointMeta load_checkpoint_from_bytes(std::string_view bytes, const std::string& name,
                                          const ReadLimits& limits, Classifier& model,
                                          torch::optim::Optimizer* optimizer, bool restore_rng) {
  return load_into(open_checkpoint(bytes, name, limits), name, model, optimizer, restore_rng);
}

void load_optimizer_state(torch::optim::Optimizer& optimizer, const std::string& bytes) {
  const TorchArchive archive =
      read_torch_archive(std::string_view(bytes), default_read_limits(bytes.size()));
  const CheckpointFields f("(optimizer snapshot)");
  checked("(optimizer snapshot)", [&] {
    detail::stage_optimizer_state(f, archive.root(), "optimizer", optimizer)();
    return 0;
  });
}

}  // namespace ltfit
