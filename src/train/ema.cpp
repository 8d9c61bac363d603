// The weight average: see ema.h.
#include "ltfit/train/ema.h"

#include <algorithm>
#include <cmath>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "ltfit/util/error.h"

namespace ltfit {

double ema_decay(const EmaConfig& config, std::int64_t step) {
  // ModelEmaV3.get_decay with update_after_step 0, warmup_gamma 1, warmup_power 2/3, min_decay 0
  const std::int64_t t = std::max<std::int64_t>(0, step - 1);
  if (t <= 0) return 0.0;
  if (!config.warmup) return config.decay;
  const double warm = 1.0 - std::pow(1.0 + static_cast<double>(t), -2.0 / 3.0);
  return std::max(std::min(warm, config.decay), 0.0);
}

void ema_update(const std::vector<torch::Tensor>& ema, const std::vector<torch::Tensor>& model,
                double decay) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> ema_float, model_float;
  for (std::size_t i = 0; i < ema.size(); ++i) {
    if (ema[i].is_floating_point()) {
      ema_float.push_back(ema[i]);
      model_float.push_back(model[i]);
    } else {
      ema[i].copy_(model[i]);
    }
  }
  if (!ema_float.empty()) torch::_foreach_lerp_(ema_float, model_float, 1.0 - decay);
}

std::vector<std::pair<std::string, torch::Tensor>> model_state(Classifier& model) {
  std::vector<std::pair<std::string, torch::Tensor>> state;
  for (const auto& p : model->named_parameters(/*recurse=*/true))
    state.emplace_back(p.key(), p.value());
  for (const auto& b : model->named_buffers(/*recurse=*/true))
    state.emplace_back(b.key(), b.value());
  return state;
}

namespace {

std::vector<torch::Tensor> values_of(Classifier& model) {
  std::vector<torch::Tensor> values;
  for (auto& [name, value] : model_state(model)) values.push_back(value);
  return values;
}

void copy_all(const std::vector<torch::Tensor>& into, const std::vector<torch::Tensor>& from) {
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < into.size(); ++i) into[i].copy_(from[i]);
}

// Copies the "ema" record's tensors into `into`, entry by entry by name, once the version, the
// count and every entry's shape and type check out (nothing is copied otherwise).
void copy_checked(const HookState& state, const std::vector<std::string>& names,
                  const std::vector<torch::Tensor>& into, const std::string& hint) {
  if (state.version != 1) {
    throw CheckpointError("the checkpoint's ema state has version " +
                              std::to_string(state.version) + "; this ltfit reads version 1",
                          "use the ltfit that wrote it, or a newer one");
  }
  if (state.tensors.size() != names.size()) {
    throw CheckpointError("the checkpoint's ema state holds " +
                              std::to_string(state.tensors.size()) + " tensors; the model has " +
                              std::to_string(names.size()),
                          hint);
  }
  std::vector<const torch::Tensor*> from;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto found = state.tensors.find(names[i]);
    if (found == state.tensors.end() || found->second.sizes() != into[i].sizes() ||
        found->second.scalar_type() != into[i].scalar_type()) {
      throw CheckpointError("the checkpoint's ema state has no tensor '" + names[i] +
                                "' of the model's shape and type",
                            hint);
    }
    from.push_back(&found->second);
  }
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < names.size(); ++i) into[i].copy_(*from[i]);
}

}  // namespace

EmaHook::EmaHook(EmaConfig config) : config_(config) {
  if (!(config_.decay > 0.0 && config_.decay < 1.0)) {
    throw ConfigError("train.ema.decay must be in (0, 1), got " + std::to_string(config_.decay));
  }
}

void EmaHook::fit_begin(TrainContext& ctx) {
  // ModelEmaV3 starts as a copy of the model it is made from.
  torch::NoGradGuard no_grad;
  names_.clear();
  weights_.clear();
  ema_.clear();
  for (auto& [name, value] : model_state(ctx.model)) {
    names_.push_back(name);
    weights_.push_back(value);
    ema_.push_back(value.detach().clone());
  }
}

void EmaHook::after_step(TrainContext& ctx) {
  ema_update(ema_, weights_, ema_decay(config_, ctx.state.global_step));
}

void EmaHook::validation_begin(TrainContext& /*ctx*/) {
  if (!config_.validate) return;
  backup_.clear();
  for (const auto& v : weights_) backup_.push_back(v.detach().clone());
  copy_all(weights_, ema_);
}

void EmaHook::validation_end(TrainContext& /*ctx*/) {
  if (backup_.empty()) return;
  copy_all(weights_, backup_);
  backup_.clear();
}

HookState EmaHook::save_state() const {
  HookState state;
  state.name = state_name();
  state.version = 1;
  for (std::size_t i = 0; i < names_.size(); ++i) state.tensors[names_[i]] = ema_[i];
  state.scalars["decay"] = config_.decay;
  return state;
}

void EmaHook::load_state(const HookState& state) {
  copy_checked(state, names_, ema_, "resume with the model the run was started with");
}

void apply_ema_state(Classifier& model, const HookState& state) {
  std::vector<std::string> names;
  std::vector<torch::Tensor> values;
  for (auto& [name, value] : model_state(model)) {
    names.push_back(name);
    values.push_back(value);
  }
  copy_checked(state, names, values,
               "use --weights model, or a checkpoint written with this model");
}

const HookState* find_ema_state(const std::vector<HookState>& states) {
  for (const HookState& s : states) {
    if (s.name == "ema") return &s;
  }
  return nullptr;
}

void EmaHook::apply_to(Classifier& model) const { copy_all(values_of(model), ema_); }

}  // namespace ltfit
