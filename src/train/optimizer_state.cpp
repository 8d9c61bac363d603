// Reading an optimizer's state back from a checkpoint (optimizer_state.h); writing it is in
// optimizer_state_write.cpp.
#include "train/optimizer_state.h"

#include <cmath>
#include <memory>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <unordered_set>
#include <utility>
#include <vector>

#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <torch/torch.h>

#include "ltfit/train/timm_optimizers.h"

namespace ltfit::detail {

namespace {

using Value = pickle::PickleValue;
using Kind = Value::Kind;
using torch::optim::AdamWOptions;
using torch::optim::AdamWParamState;
using torch::optim::OptimizerOptions;
using torch::optim::OptimizerParamState;
using torch::optim::SGDOptions;
using torch::optim::SGDParamState;

double finite(const CheckpointFields& f, double v, const std::string& key_path) {
  if (!std::isfinite(v)) f.fail(key_path, "is not a finite number");
  return v;
}

// A group's finite numbers and flags, read at `path`.
struct GroupReader {
  const CheckpointFields& f;
  const Value& g;
  const std::string& path;

  double number(const char* key) const {
    return finite(f, f.real(g, key, path), CheckpointFields::join(path, key));
  }
  bool flag(const char* key) const { return f.boolean(g, key, path); }
  // "betas": a tuple of two floats.
  std::tuple<double, double> betas() const {
    const Value& betas = f.of_kind(f.at(g, "betas", path), Kind::kTuple, path + ".betas");
    if (betas.items.size() != 2) f.fail(path + ".betas", "is not a pair");
    double b[2];
    for (int i = 0; i < 2; ++i) {
      const Value& v = *betas.items[std::size_t(i)];
      if (v.kind != Kind::kFloat)
        f.fail(path + ".betas", "holds a " + std::string(pickle::kind_name(v.kind)));
      b[i] = finite(f, v.real, path + ".betas");
    }
    return {b[0], b[1]};
  }
  // A timm option that ltfit's optimizers lack: refused when present and true.
  void refuse_flag(const char* key) const {
    const Value* v = pickle::find_entry(g, key);
    if (v != nullptr && v->kind == Kind::kBool && v->integer != 0) {
      f.fail(CheckpointFields::join(path, key),
             "is true: ltfit's optimizers have no " + std::string(key));
    }
  }
};

// A step count at `dict`'s "step": an int, or a 0-dim tensor holding an integer (timm's);
// >= 0.
std::int64_t read_step_count(const CheckpointFields& f, const Value& dict,
                             const std::string& path) {
  const std::string key_path = CheckpointFields::join(path, "step");
  const Value& v = f.at(dict, "step", path);
  if (v.kind != Kind::kTensor) {
    const std::int64_t step = f.of_kind(v, Kind::kInt, key_path).integer;
    if (step < 0) f.fail(key_path, "is negative");
    return step;
  }
  if (v.tensor.dim() != 0 || v.tensor.is_complex()) f.fail(key_path, "is not a 0-dim tensor");
  const double step = v.tensor.item<double>();
  if (!(step >= 0 && step <= 1e15 && step == std::floor(step))) {
    f.fail(key_path, "is not a step count (an integer >= 0)");
  }
  return static_cast<std::int64_t>(step);
}

std::unique_ptr<OptimizerOptions> read_lamb_options(const GroupReader& r, const LambOptions& now) {
  auto o = std::make_unique<LambOptions>(now);
  r.refuse_flag("caution");
  r.refuse_flag("corrected_weight_decay");
  o->lr(r.number("lr")).betas(r.betas()).eps(r.number("eps"));
  o->weight_decay(r.number("weight_decay")).bias_correction(r.flag("bias_correction"));
  o->grad_averaging(r.flag("grad_averaging")).trust_clip(r.flag("trust_clip"));
  o->always_adapt(r.flag("always_adapt")).decoupled_decay(r.flag("decoupled_decay"));
  const Value& norm = r.f.at(r.g, "max_grad_norm", r.path);  // None: no clipping
  if (norm.kind == Kind::kNone) {
    o->max_grad_norm(std::nullopt);
  } else {
    const std::string norm_path = CheckpointFields::join(r.path, "max_grad_norm");
    o->max_grad_norm(finite(r.f, r.f.number(norm, norm_path), norm_path));
  }
  o->step(read_step_count(r.f, r.g, r.path));
  return o;
}

std::unique_ptr<OptimizerOptions> read_rmsprop_options(const GroupReader& r,
                                                       const RMSpropTFOptions& now) {
  auto o = std::make_unique<RMSpropTFOptions>(now);
  r.refuse_flag("caution");
  r.refuse_flag("corrected_weight_decay");
  o->lr(r.number("lr")).momentum(r.number("momentum")).alpha(r.number("alpha"));
  o->eps(r.number("eps")).weight_decay(r.number("weight_decay")).centered(r.flag("centered"));
  o->decoupled_decay(r.flag("decoupled_decay")).lr_in_momentum(r.flag("lr_in_momentum"));
  return o;
}

std::unique_ptr<OptimizerOptions> read_options(const CheckpointFields& f, const Value& g,
                                               const std::string& path,
                                               const OptimizerOptions& current) {
  const GroupReader r{f, g, path};
  if (const auto* a = dynamic_cast<const AdamWOptions*>(&current)) {
    auto o = std::make_unique<AdamWOptions>(*a);
    o->lr(r.number("lr")).eps(r.number("eps")).weight_decay(r.number("weight_decay"));
    o->betas(r.betas()).amsgrad(r.flag("amsgrad"));
    return o;
  }
  if (const auto* s = dynamic_cast<const SGDOptions*>(&current)) {
    auto o = std::make_unique<SGDOptions>(*s);
    o->lr(r.number("lr")).momentum(r.number("momentum")).dampening(r.number("dampening"));
    o->weight_decay(r.number("weight_decay")).nesterov(r.flag("nesterov"));
    return o;
  }
  if (const auto* l = dynamic_cast<const LambOptions*>(&current)) return read_lamb_options(r, *l);
  if (const auto* m = dynamic_cast<const RMSpropTFOptions*>(&current)) {
    return read_rmsprop_options(r, *m);
  }
  throw std::logic_error(kOptimizerTypesHeld);
}

// A state tensor of `param`'s shape, copied into a new tensor like `param` (device, dtype,
// memory format), as the optimizer itself would have made it.
torch::Tensor state_tensor(const CheckpointFields& f, const Value& state, const char* key,
                           const std::string& path, const torch::Tensor& param) {
  const std::string key_path = CheckpointFields::join(path, key);
  const torch::Tensor& saved = f.of_kind(f.at(state, key, path), Kind::kTensor, key_path).tensor;
  if (saved.sizes() != param.sizes()) {
    f.fail(key_path, "has shape " + c10::str(saved.sizes()) + ", its parameter has " +
                         c10::str(param.sizes()));
  }
  if (!saved.is_floating_point()) f.fail(key_path, "is not a floating-point tensor");
  torch::NoGradGuard no_grad;
  torch::Tensor out = torch::empty_like(param);
  out.copy_(saved);
  return out;
}

// state_tensor when `key` is present and not None; else undefined.
torch::Tensor optional_state_tensor(const CheckpointFields& f, const Value& state, const char* key,
                                    const std::string& path, const torch::Tensor& param) {
  const Value* v = pickle::find_entry(state, key);
  if (v == nullptr || v->kind == Kind::kNone) return {};
  return state_tensor(f, state, key, path, param);
}

std::unique_ptr<OptimizerParamState> read_adamw_state(const CheckpointFields& f, const Value& v,
                                                      const std::string& path,
                                                      const torch::Tensor& param) {
  auto s = std::make_unique<AdamWParamState>();
  const std::int64_t step = f.integer(v, "step", path);
  if (step < 0) f.fail(path + ".step", "is negative");
  s->step(step);
  s->exp_avg(state_tensor(f, v, "exp_avg", path, param));
  s->exp_avg_sq(state_tensor(f, v, "exp_avg_sq", path, param));
  if (pickle::find_entry(v, "max_exp_avg_sq") != nullptr) {
    s->max_exp_avg_sq(state_tensor(f, v, "max_exp_avg_sq", path, param));
  }
  return s;
}

// One parameter's state for an optimizer of `type` (optimizer_type's names). Null for an SGD
// state without a momentum buffer (None): the parameter gets no state.
std::unique_ptr<OptimizerParamState> read_param_state(const CheckpointFields& f, const Value& v,
                                                      const std::string& path,
                                                      const torch::Tensor& param,
                                                      const std::string& type) {
  f.of_kind(v, Kind::kDict, path);
  if (type == "AdamW") return read_adamw_state(f, v, path, param);
  if (type == "Lamb") {
    auto s = std::make_unique<LambParamState>();
    s->exp_avg(state_tensor(f, v, "exp_avg", path, param));
    s->exp_avg_sq(state_tensor(f, v, "exp_avg_sq", path, param));
    return s;
  }
  if (type == "RMSpropTF") {  // absent buffers stay undefined: RMSpropTF makes them as needed
    auto s = std::make_unique<RMSpropTFParamState>();
    s->step(read_step_count(f, v, path));
    s->square_avg(state_tensor(f, v, "square_avg", path, param));
    s->momentum_buffer(optional_state_tensor(f, v, "momentum_buffer", path, param));
    s->grad_avg(optional_state_tensor(f, v, "grad_avg", path, param));
    return s;
  }
  if (f.at(v, "momentum_buffer", path).kind == Kind::kNone) return nullptr;
  auto s = std::make_unique<SGDParamState>();
  s->momentum_buffer(state_tensor(f, v, "momentum_buffer", path, param));
  return s;
}

// What stage_optimizer_state checked, applied at once.
struct StagedState {
  torch::optim::Optimizer* optimizer = nullptr;
  std::vector<std::unique_ptr<OptimizerOptions>> options;  // per group
  std::vector<torch::Tensor> params;                       // every parameter, in index order
  std::vector<std::pair<void*, std::unique_ptr<OptimizerParamState>>> states;

  void apply() {
    auto& groups = optimizer->param_groups();
    for (std::size_t i = 0; i < groups.size(); ++i) groups[i].set_options(std::move(options[i]));
    for (const torch::Tensor& p : params) optimizer->state().erase(p.unsafeGetTensorImpl());
    for (auto& [key, state] : states) optimizer->state()[key] = std::move(state);
  }
};

void stage_groups(const CheckpointFields& f, const Value& value, const std::string& path,
                  StagedState& staged) {
  auto& groups = staged.optimizer->param_groups();
  const std::string groups_path = path + ".param_groups";
  const Value& saved = f.of_kind(f.at(value, "param_groups", path), Kind::kList, groups_path);
  if (saved.items.size() != groups.size()) {
    f.fail(groups_path, "has " + std::to_string(saved.items.size()) +
                            " parameter groups, the optimizer has " +
                            std::to_string(groups.size()));
  }
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const std::string g_path = groups_path + "[" + std::to_string(i) + "]";
    const Value& g = f.of_kind(*saved.items[i], Kind::kDict, g_path);
    const Value& indices = f.of_kind(f.at(g, "params", g_path), Kind::kList, g_path + ".params");
    if (indices.items.size() != groups[i].params().size()) {
      f.fail(g_path + ".params", "lists " + std::to_string(indices.items.size()) +
                                     " parameters, the optimizer's group has " +
                                     std::to_string(groups[i].params().size()));
    }
    for (std::size_t k = 0; k < indices.items.size(); ++k) {
      const Value& index = *indices.items[k];
      if (index.kind != Kind::kInt || index.integer != std::int64_t(staged.params.size())) {
        f.fail(g_path + ".params", "numbers the parameters out of order");
      }
      staged.params.push_back(groups[i].params()[k]);
    }
    staged.options.push_back(read_options(f, g, g_path, groups[i].options()));
  }
}

}  // namespace

std::function<void()> stage_optimizer_state(const CheckpointFields& f, const Value& value,
                                            const std::string& path,
                                            torch::optim::Optimizer& optimizer) {
  auto staged = std::make_shared<StagedState>();
  staged->optimizer = &optimizer;
  f.of_kind(value, Kind::kDict, path);
  stage_groups(f, value, path, *staged);
  const std::string type = optimizer_type(optimizer);
  const Value& state = f.of_kind(f.at(value, "state", path), Kind::kDict, path + ".state");
  std::unordered_set<std::int64_t> seen;
  for (const auto& [key, v] : state.entries) {
    if (key->kind != Kind::kInt || key->integer < 0 ||
        key->integer >= std::int64_t(staged->params.size()) || !seen.insert(key->integer).second) {
      f.fail(path + ".state", "has a key that is not a parameter index");
    }
    const torch::Tensor& param = staged->params[std::size_t(key->integer)];
    auto s = read_param_state(f, *v, path + ".state." + std::to_string(key->integer), param, type);
    if (s) staged->states.emplace_back(param.unsafeGetTensorImpl(), std::move(s));
  }
  return [staged] { staged->apply(); };
}

}  // namespace ltfit::detail
