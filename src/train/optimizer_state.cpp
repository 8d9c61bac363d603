#include "train/optimizer_state.h"

#include <cmath>
#include <memory>
#include <unordered_set>
#include <utility>
#include <vector>

#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <torch/torch.h>

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

// ---- writing ---------------------------------------------------------------------------------

// The hyper-parameters of one group under PyTorch's names (the keys LibTorch lacks with their
// PyTorch defaults, so that torch.optim.AdamW / SGD.load_state_dict accept the dict).
void write_group_options(pickle::PickleWriter& w, const OptimizerOptions& options) {
  const auto number = [&w](const char* key, double v) {
    w.string(key);
    w.real(v);
  };
  const auto flag = [&w](const char* key, bool v) {
    w.string(key);
    w.boolean(v);
  };
  const auto none = [&w](const char* key) {
    w.string(key);
    w.none();
  };
  if (const auto* a = dynamic_cast<const AdamWOptions*>(&options)) {
    number("lr", a->lr());
    w.string("betas");
    w.mark();
    w.real(std::get<0>(a->betas()));
    w.real(std::get<1>(a->betas()));
    w.tuple();
    number("eps", a->eps());
    number("weight_decay", a->weight_decay());
    flag("amsgrad", a->amsgrad());
    flag("maximize", false);
    none("foreach");
    flag("capturable", false);
    flag("differentiable", false);
    none("fused");
  } else if (const auto* s = dynamic_cast<const SGDOptions*>(&options)) {
    number("lr", s->lr());
    number("momentum", s->momentum());
    number("dampening", s->dampening());
    number("weight_decay", s->weight_decay());
    flag("nesterov", s->nesterov());
    flag("maximize", false);
    none("foreach");
    flag("differentiable", false);
    none("fused");
  } else {
    throw std::logic_error("checkpoints hold AdamW or SGD optimizers only");
  }
}

void write_param_state(TorchArchiveWriter& out, const OptimizerParamState& state) {
  pickle::PickleWriter& w = out.pickle();
  w.empty_dict();
  w.mark();
  if (const auto* a = dynamic_cast<const AdamWParamState*>(&state)) {
    w.string("step");
    w.integer(a->step());
    w.string("exp_avg");
    out.tensor(a->exp_avg());
    w.string("exp_avg_sq");
    out.tensor(a->exp_avg_sq());
    if (a->max_exp_avg_sq().defined()) {
      w.string("max_exp_avg_sq");
      out.tensor(a->max_exp_avg_sq());
    }
  } else if (const auto* s = dynamic_cast<const SGDParamState*>(&state)) {
    w.string("momentum_buffer");
    if (s->momentum_buffer().defined()) {
      out.tensor(s->momentum_buffer());
    } else {
      w.none();
    }
  } else {
    throw std::logic_error("checkpoints hold AdamW or SGD optimizers only");
  }
  w.set_items();
}

// ---- reading ---------------------------------------------------------------------------------

double finite(const CheckpointFields& f, double v, const std::string& key_path) {
  if (!std::isfinite(v)) f.fail(key_path, "is not a finite number");
  return v;
}

std::unique_ptr<OptimizerOptions> read_options(const CheckpointFields& f, const Value& g,
                                               const std::string& path,
                                               const OptimizerOptions& current) {
  const auto number = [&](const char* key) {
    return finite(f, f.real(g, key, path), CheckpointFields::join(path, key));
  };
  if (const auto* a = dynamic_cast<const AdamWOptions*>(&current)) {
    auto o = std::make_unique<AdamWOptions>(*a);
    const Value& betas = f.of_kind(f.at(g, "betas", path), Kind::kTuple, path + ".betas");
    if (betas.items.size() != 2) f.fail(path + ".betas", "is not a pair");
    double b[2];
    for (int i = 0; i < 2; ++i) {
      const Value& v = *betas.items[std::size_t(i)];
      if (v.kind != Kind::kFloat)
        f.fail(path + ".betas", "holds a " + std::string(pickle::kind_name(v.kind)));
      b[i] = finite(f, v.real, path + ".betas");
    }
    o->lr(number("lr")).eps(number("eps")).weight_decay(number("weight_decay"));
    o->betas({b[0], b[1]}).amsgrad(f.boolean(g, "amsgrad", path));
    return o;
  }
  const auto* s = dynamic_cast<const SGDOptions*>(&current);
  if (s == nullptr) throw std::logic_error("checkpoints hold AdamW or SGD optimizers only");
  auto o = std::make_unique<SGDOptions>(*s);
  o->lr(number("lr")).momentum(number("momentum")).dampening(number("dampening"));
  o->weight_decay(number("weight_decay")).nesterov(f.boolean(g, "nesterov", path));
  return o;
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

// Null for an SGD state without a momentum buffer (None): the parameter gets no state.
std::unique_ptr<OptimizerParamState> read_param_state(const CheckpointFields& f, const Value& v,
                                                      const std::string& path,
                                                      const torch::Tensor& param, bool adamw) {
  f.of_kind(v, Kind::kDict, path);
  if (adamw) {
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

const char* optimizer_type(const torch::optim::Optimizer& optimizer) {
  if (optimizer.param_groups().empty()) return "none";
  const OptimizerOptions& options = optimizer.param_groups().front().options();
  if (dynamic_cast<const AdamWOptions*>(&options) != nullptr) return "AdamW";
  if (dynamic_cast<const SGDOptions*>(&options) != nullptr) return "SGD";
  return "other";
}

void write_optimizer_state(TorchArchiveWriter& out, const torch::optim::Optimizer& optimizer) {
  pickle::PickleWriter& w = out.pickle();
  w.empty_dict();
  w.mark();
  w.string("state");
  w.empty_dict();
  w.mark();
  std::int64_t index = 0;
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) {
      const auto it = optimizer.state().find(p.unsafeGetTensorImpl());
      if (it != optimizer.state().end()) {
        w.integer(index);
        write_param_state(out, *it->second);
      }
      ++index;
    }
  }
  w.set_items();
  w.string("param_groups");
  w.empty_list();
  w.mark();
  index = 0;
  for (const auto& group : optimizer.param_groups()) {
    w.empty_dict();
    w.mark();
    write_group_options(w, group.options());
    w.string("params");
    w.empty_list();
    w.mark();
    for (std::size_t k = 0; k < group.params().size(); ++k) w.integer(index++);
    w.appends();
    w.set_items();
  }
  w.appends();
  w.set_items();
}

std::function<void()> stage_optimizer_state(const CheckpointFields& f, const Value& value,
                                            const std::string& path,
                                            torch::optim::Optimizer& optimizer) {
  auto staged = std::make_shared<StagedState>();
  staged->optimizer = &optimizer;
  f.of_kind(value, Kind::kDict, path);
  stage_groups(f, value, path, *staged);
  const bool adamw = std::string(optimizer_type(optimizer)) == "AdamW";
  const Value& state = f.of_kind(f.at(value, "state", path), Kind::kDict, path + ".state");
  std::unordered_set<std::int64_t> seen;
  for (const auto& [key, v] : state.entries) {
    if (key->kind != Kind::kInt || key->integer < 0 ||
        key->integer >= std::int64_t(staged->params.size()) || !seen.insert(key->integer).second) {
      f.fail(path + ".state", "has a key that is not a parameter index");
    }
    const torch::Tensor& param = staged->params[std::size_t(key->integer)];
    auto s = read_param_state(f, *v, path + ".state." + std::to_string(key->integer), param, adamw);
    if (s) staged->states.emplace_back(param.unsafeGetTensorImpl(), std::move(s));
  }
  return [staged] { staged->apply(); };
}

}  // namespace ltfit::detail
