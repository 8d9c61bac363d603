// Writing an optimizer's state into a checkpoint (optimizer_state.h); reading it back is in
// optimizer_state.cpp.
#include <memory>
#include <stdexcept>

#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <torch/torch.h>

#include "ltfit/train/timm_optimizers.h"
#include "train/optimizer_state.h"

namespace ltfit::detail {

namespace {

using torch::optim::AdamWOptions;
using torch::optim::AdamWParamState;
using torch::optim::OptimizerOptions;
using torch::optim::OptimizerParamState;
using torch::optim::SGDOptions;
using torch::optim::SGDParamState;

// A group's keys as items of the pickled dict being written.
struct OptionItemWriter {
  TorchArchiveWriter& out;

  void number(const char* key, double v) const {
    out.pickle().string(key);
    out.pickle().real(v);
  }
  void flag(const char* key, bool v) const {
    out.pickle().string(key);
    out.pickle().boolean(v);
  }
  void none(const char* key) const {
    out.pickle().string(key);
    out.pickle().none();
  }
  void betas(const std::tuple<double, double>& v) const {
    pickle::PickleWriter& w = out.pickle();
    w.string("betas");
    w.mark();
    w.real(std::get<0>(v));
    w.real(std::get<1>(v));
    w.tuple();
  }
};

// timm's Lamb group: its keyword arguments (caution and corrected_weight_decay off, which ltfit
// lacks), max_lr_snapshot (read only with corrected_weight_decay) and the group's step.
void write_lamb_options(const OptionItemWriter& o, const LambOptions& l) {
  o.number("lr", l.lr());
  o.flag("bias_correction", l.bias_correction());
  o.betas(l.betas());
  o.number("eps", l.eps());
  o.number("weight_decay", l.weight_decay());
  o.flag("grad_averaging", l.grad_averaging());
  if (l.max_grad_norm()) {
    o.number("max_grad_norm", *l.max_grad_norm());
  } else {
    o.none("max_grad_norm");
  }
  o.flag("trust_clip", l.trust_clip());
  o.flag("always_adapt", l.always_adapt());
  o.flag("caution", false);
  o.flag("decoupled_decay", l.decoupled_decay());
  o.flag("corrected_weight_decay", false);
  o.number("max_lr_snapshot", l.lr());
  o.none("foreach");
  o.out.pickle().string("step");  // a 0-dim float32 tensor: timm's step() adds to it in place
  o.out.tensor(torch::tensor(static_cast<float>(l.step())));
}

void write_rmsprop_options(const OptionItemWriter& o, const RMSpropTFOptions& r) {
  o.number("lr", r.lr());
  o.number("momentum", r.momentum());
  o.number("alpha", r.alpha());
  o.number("eps", r.eps());
  o.flag("centered", r.centered());
  o.number("weight_decay", r.weight_decay());
  o.flag("decoupled_decay", r.decoupled_decay());
  o.flag("corrected_weight_decay", false);
  o.number("max_lr_snapshot", r.lr());
  o.flag("lr_in_momentum", r.lr_in_momentum());
  o.flag("caution", false);
  o.none("foreach");
}

// The hyper-parameters of one group under PyTorch's names (the keys LibTorch lacks with their
// PyTorch defaults, so that torch.optim.AdamW / SGD.load_state_dict accept the dict; timm's for
// Lamb and RMSpropTF).
void write_group_options(TorchArchiveWriter& out, const OptimizerOptions& options) {
  const OptionItemWriter o{out};
  if (const auto* a = dynamic_cast<const AdamWOptions*>(&options)) {
    o.number("lr", a->lr());
    o.betas(a->betas());
    o.number("eps", a->eps());
    o.number("weight_decay", a->weight_decay());
    o.flag("amsgrad", a->amsgrad());
    o.flag("maximize", false);
    o.none("foreach");
    o.flag("capturable", false);
    o.flag("differentiable", false);
    o.none("fused");
  } else if (const auto* s = dynamic_cast<const SGDOptions*>(&options)) {
    o.number("lr", s->lr());
    o.number("momentum", s->momentum());
    o.number("dampening", s->dampening());
    o.number("weight_decay", s->weight_decay());
    o.flag("nesterov", s->nesterov());
    o.flag("maximize", false);
    o.none("foreach");
    o.flag("differentiable", false);
    o.none("fused");
  } else if (const auto* l = dynamic_cast<const LambOptions*>(&options)) {
    write_lamb_options(o, *l);
  } else if (const auto* r = dynamic_cast<const RMSpropTFOptions*>(&options)) {
    write_rmsprop_options(o, *r);
  } else {
    throw std::logic_error(kOptimizerTypesHeld);
  }
}

// `key`: T, when `t` is defined.
void write_defined_tensor(TorchArchiveWriter& out, const char* key, const torch::Tensor& t) {
  if (!t.defined()) return;
  out.pickle().string(key);
  out.tensor(t);
}

void write_param_state(TorchArchiveWriter& out, const OptimizerParamState& state) {
  pickle::PickleWriter& w = out.pickle();
  w.empty_dict();
  w.mark();
  if (const auto* a = dynamic_cast<const AdamWParamState*>(&state)) {
    w.string("step");
    w.integer(a->step());
    write_defined_tensor(out, "exp_avg", a->exp_avg());
    write_defined_tensor(out, "exp_avg_sq", a->exp_avg_sq());
    write_defined_tensor(out, "max_exp_avg_sq", a->max_exp_avg_sq());
  } else if (const auto* s = dynamic_cast<const SGDParamState*>(&state)) {
    w.string("momentum_buffer");
    if (s->momentum_buffer().defined()) {
      out.tensor(s->momentum_buffer());
    } else {
      w.none();
    }
  } else if (const auto* l = dynamic_cast<const LambParamState*>(&state)) {
    write_defined_tensor(out, "exp_avg", l->exp_avg());  // timm's Lamb: no per-parameter step
    write_defined_tensor(out, "exp_avg_sq", l->exp_avg_sq());
  } else if (const auto* r = dynamic_cast<const RMSpropTFParamState*>(&state)) {
    w.string("step");  // timm writes a tensor; an int loads as well (the step is never read)
    w.integer(r->step());
    write_defined_tensor(out, "square_avg", r->square_avg());
    write_defined_tensor(out, "momentum_buffer", r->momentum_buffer());  // momentum > 0
    write_defined_tensor(out, "grad_avg", r->grad_avg());                // centered
  } else {
    throw std::logic_error(kOptimizerTypesHeld);
  }
  w.set_items();
}

}  // namespace

const char* optimizer_type(const torch::optim::Optimizer& optimizer) {
  if (optimizer.param_groups().empty()) return "none";
  const OptimizerOptions& options = optimizer.param_groups().front().options();
  if (dynamic_cast<const AdamWOptions*>(&options) != nullptr) return "AdamW";
  if (dynamic_cast<const SGDOptions*>(&options) != nullptr) return "SGD";
  if (dynamic_cast<const LambOptions*>(&options) != nullptr) return "Lamb";
  if (dynamic_cast<const RMSpropTFOptions*>(&options) != nullptr) return "RMSpropTF";
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
    write_group_options(out, group.options());
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

}  // namespace ltfit::detail
