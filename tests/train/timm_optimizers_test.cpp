// timm's Lamb and RMSpropTF in LibTorch (train/timm_optimizers.h): their first steps against
// timm's formulas written out, their state through torch::save / torch::load bit for bit, Lamb's
// per-group step count. timm's own classes are the oracle of tests/train/timm_optimizers_oracle.sh
// ("[.][timm_optimizers_oracle]" below: 100 steps of 9 option sets within 1e-6).
#include <torch/torch.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ltfit/model/torch_weights.h"
#include "ltfit/train/timm_optimizers.h"

namespace {

using ltfit::Lamb;
using ltfit::LambOptions;
using ltfit::RMSpropTF;
using ltfit::RMSpropTFOptions;
using torch::optim::OptimizerParamGroup;
using TimmOptTensors = std::vector<torch::Tensor>;

TimmOptTensors timm_opt_clone(const TimmOptTensors& params) {
  TimmOptTensors out;
  for (const auto& p : params) out.push_back(p.detach().clone().requires_grad_());
  return out;
}

double timm_opt_gap(const TimmOptTensors& a, const TimmOptTensors& b) {
  double gap = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    gap = std::max(gap, (a[i].detach() - b[i].detach()).abs().max().item<double>());
  }
  return gap;
}

// Seeded parameters of mixed shapes: a conv weight, a matrix, a bias.
TimmOptTensors timm_opt_params(std::uint64_t seed) {
  torch::manual_seed(seed);
  return {torch::randn({4, 3, 3, 3}).requires_grad_(), torch::randn({6, 5}).requires_grad_(),
          torch::randn({6}).requires_grad_()};
}

// Gives every parameter a seeded gradient of norm ~ scale * sqrt(numel).
void timm_opt_set_grads(TimmOptTensors& params, int t, double scale) {
  torch::manual_seed(1000 + t);
  for (auto& p : params) p.mutable_grad() = torch::randn(p.sizes()) * scale;
}

// Two groups as ltfit builds them: weights with decay, the bias without.
std::vector<OptimizerParamGroup> timm_opt_groups(const TimmOptTensors& p, const auto& options) {
  using Options = std::decay_t<decltype(options)>;
  auto decayed = std::make_unique<Options>(options);
  auto exempt = std::make_unique<Options>(options);
  exempt->weight_decay(0.0).lr(options.lr() / 2);
  std::vector<OptimizerParamGroup> groups;
  groups.emplace_back(TimmOptTensors{p[0], p[1]}, std::move(decayed));
  groups.emplace_back(TimmOptTensors{p[2]}, std::move(exempt));
  return groups;
}

// Saves `from` with torch::save and loads it into `to` (an optimizer over other tensors).
void timm_opt_round_trip(const torch::optim::Optimizer& from, torch::optim::Optimizer& to) {
  std::stringstream stream;
  torch::save(from, stream);
  torch::load(to, stream);
}

}  // namespace

// LibTorch's Optimizer constructor gives groups of optimizer types it does not know the defaults'
// options: ours put the groups' own back.
TEST_CASE("Lamb's and RMSpropTF's groups keep their own options", "[train][timm_optimizers]") {
  const TimmOptTensors params = timm_opt_params(5);
  Lamb lamb(timm_opt_groups(params, LambOptions(0.02).weight_decay(0.05)), LambOptions(0.1));
  RMSpropTF rms(timm_opt_groups(params, RMSpropTFOptions(0.02).weight_decay(0.05)),
                RMSpropTFOptions(0.1));
  for (torch::optim::Optimizer* optimizer : {static_cast<torch::optim::Optimizer*>(&lamb),
                                             static_cast<torch::optim::Optimizer*>(&rms)}) {
    const auto& groups = optimizer->param_groups();
    REQUIRE(groups.size() == 2);
    CHECK(groups[0].options().get_lr() == 0.02);
    CHECK(groups[1].options().get_lr() == 0.01);
  }
  CHECK(static_cast<const LambOptions&>(lamb.param_groups()[0].options()).weight_decay() == 0.05);
  CHECK(static_cast<const LambOptions&>(lamb.param_groups()[1].options()).weight_decay() == 0.0);
  const auto& exempt = static_cast<const RMSpropTFOptions&>(rms.param_groups()[1].options());
  CHECK(exempt.weight_decay() == 0.0);
  CHECK(exempt.momentum() == 0.9);  // timm's create_optimizer default
  CHECK(exempt.eps() == 1e-10);
}

TEST_CASE("Lamb's first step is timm's formula", "[train][timm_optimizers]") {
  TimmOptTensors params = timm_opt_params(1);
  const TimmOptTensors start = timm_opt_clone(params);
  const double lr = 0.02, wd = 0.05, eps = 1e-6, b1 = 0.9, b2 = 0.999;
  Lamb lamb(timm_opt_groups(params, LambOptions(lr).weight_decay(wd)), LambOptions(lr));
  timm_opt_set_grads(params, 0, 0.5);  // global norm ~6: clipped to 1
  lamb.step();
  // In double: g' = g / max(1, ||g||_global); m_hat = g', v_hat = g'^2; u = m_hat / (|v_hat|^.5 +
  // eps) + wd p; p -= lr ||p|| / ||u|| u for decayed groups, lr u for the others.
  double total = 0.0;
  for (const auto& p : params) total += p.grad().to(torch::kFloat64).pow(2).sum().item<double>();
  const double clip = std::max(1.0, std::sqrt(total));
  for (std::size_t i = 0; i < params.size(); ++i) {
    const torch::Tensor p0 = start[i].detach().to(torch::kFloat64);
    const torch::Tensor g = params[i].grad().to(torch::kFloat64) / clip;
    const torch::Tensor m = (1 - b1) * g / (1 - b1);
    const torch::Tensor v = ((1 - b2) * g * g / (1 - b2)).sqrt();
    const bool decayed = i < 2;
    torch::Tensor u = m / (v + eps) + (decayed ? wd : 0.0) * p0;
    const double trust = decayed ? (p0.norm() / u.norm()).item<double>() : 1.0;
    const double group_lr = decayed ? lr : lr / 2;
    const torch::Tensor expected = p0 - group_lr * trust * u;
    INFO("parameter " << i);
    CHECK((params[i].detach().to(torch::kFloat64) - expected).abs().max().item<double>() < 1e-6);
  }
  CHECK(static_cast<const LambOptions&>(lamb.param_groups()[0].options()).step() == 1);
}

TEST_CASE("RMSpropTF's first steps are timm's formula", "[train][timm_optimizers]") {
  for (const double eps : {1e-10, 1e-3}) {
    INFO("eps " << eps);
    TimmOptTensors params = timm_opt_params(2);
    torch::Tensor p = params[0].detach().to(torch::kFloat64);
    const double lr = 0.01, alpha = 0.9, momentum = 0.9;
    RMSpropTF rms(params, RMSpropTFOptions(lr).eps(eps));
    // square_avg starts at ones; buf = momentum buf + lr g / sqrt(square_avg + eps); p -= buf.
    torch::Tensor square_avg = torch::ones_like(p), buf = torch::zeros_like(p);
    for (int t = 0; t < 3; ++t) {
      timm_opt_set_grads(params, t, 1.0);
      const torch::Tensor g = params[0].grad().to(torch::kFloat64);
      rms.step();
      square_avg = square_avg + (1 - alpha) * (g * g - square_avg);
      buf = momentum * buf + lr * g / (square_avg + eps).sqrt();
      p = p - buf;
      CHECK((params[0].detach().to(torch::kFloat64) - p).abs().max().item<double>() < 1e-6);
    }
    const auto& state = static_cast<const ltfit::RMSpropTFParamState&>(
        *rms.state().at(params[0].unsafeGetTensorImpl()));
    CHECK(state.step() == 3);
    CHECK((state.square_avg().to(torch::kFloat64) - square_avg).abs().max().item<double>() < 1e-6);
    CHECK_FALSE(state.grad_avg().defined());  // not centered
  }
}

TEST_CASE("Lamb and RMSpropTF continue bit for bit after torch::save / torch::load",
          "[train][timm_optimizers]") {
  const auto check = [](auto make) {
    TimmOptTensors a = timm_opt_params(3), b = timm_opt_clone(a);
    auto first = make(a);
    for (int t = 0; t < 20; ++t) {
      timm_opt_set_grads(a, t, 0.3);
      first->param_groups()[1].options().set_lr(1e-3 * (t + 1));  // a schedule's way
      first->step();
    }
    b = timm_opt_clone(a);
    auto second = make(b);  // fresh state, the initial LRs
    timm_opt_round_trip(*first, *second);
    CHECK(second->param_groups()[1].options().get_lr() == 1e-3 * 20);
    CHECK(second->state().size() == 3);
    for (int t = 20; t < 40; ++t) {
      for (auto* params : {&a, &b}) timm_opt_set_grads(*params, t, 0.3);
      first->step();
      second->step();
    }
    CHECK(timm_opt_gap(a, b) == 0.0);
    CHECK(timm_opt_gap(a, timm_opt_params(3)) > 1e-3);  // it moved
  };
  SECTION("Lamb") {
    check([](const TimmOptTensors& p) {
      return std::make_unique<Lamb>(timm_opt_groups(p, LambOptions(0.01)), LambOptions(0.01));
    });
  }
  SECTION("RMSpropTF, centered, decoupled decay") {
    check([](const TimmOptTensors& p) {
      const auto o = RMSpropTFOptions(0.01).centered(true).decoupled_decay(true).weight_decay(0.1);
      return std::make_unique<RMSpropTF>(timm_opt_groups(p, o), o);
    });
  }
}

TEST_CASE("Lamb counts steps per group, frozen groups too, and saves the count",
          "[train][timm_optimizers]") {
  TimmOptTensors params = timm_opt_params(4);
  Lamb lamb(timm_opt_groups(params, LambOptions(0.01)), LambOptions(0.01).max_grad_norm({}));
  for (int t = 0; t < 5; ++t) {
    timm_opt_set_grads(params, t, 1.0);
    params[2].mutable_grad().reset();  // the second group is frozen
    lamb.step();
  }
  CHECK_FALSE(lamb.state().count(params[2].unsafeGetTensorImpl()));
  const torch::Tensor frozen = params[2].detach().clone();
  timm_opt_set_grads(params, 5, 1.0);
  lamb.step();
  // timm's bias correction of the first step of a parameter in a group at step 6:
  // m_hat = 0.1 g / (1 - 0.9^6), sqrt(v_hat) = |g| sqrt(0.001 / (1 - 0.999^6)), no trust ratio.
  const torch::Tensor g = params[2].grad().to(torch::kFloat64);
  const torch::Tensor u = (0.1 * g / (1 - std::pow(0.9, 6))) /
                          (g.abs() * std::sqrt(0.001 / (1 - std::pow(0.999, 6))) + 1e-6);
  const torch::Tensor expected = frozen.to(torch::kFloat64) - 0.005 * u;
  CHECK((params[2].detach().to(torch::kFloat64) - expected).abs().max().item<double>() < 1e-6);
  TimmOptTensors copy = timm_opt_clone(params);
  Lamb loaded(timm_opt_groups(copy, LambOptions(0.01)), LambOptions(0.01));
  timm_opt_round_trip(lamb, loaded);
  for (const auto& group : loaded.param_groups()) {
    CHECK(static_cast<const LambOptions&>(group.options()).step() == 6);
  }
}

// ---- the C++ half of tests/train/timm_optimizers_oracle.sh ------------------------------------

namespace {

using TimmOptTensorMap = std::map<std::string, torch::Tensor>;

TimmOptTensorMap timm_opt_read(const std::string& path) {
  TimmOptTensorMap out;
  for (auto& [name, tensor] : ltfit::read_torch_state_dict(path)) out[name] = tensor.clone();
  return out;
}

// params.pt's parameters p0, p1, ... in order.
TimmOptTensors timm_opt_initial(const TimmOptTensorMap& initial) {
  TimmOptTensors out;
  for (std::size_t k = 0; k < initial.size(); ++k)
    out.push_back(initial.at("p" + std::to_string(k)));
  return out;
}

// The optimizer of one oracle run (problem.json's "runs"[i]) over `params` split in `groups`.
std::unique_ptr<torch::optim::Optimizer> timm_opt_make(const nlohmann::json& run,
                                                       const nlohmann::json& groups,
                                                       const TimmOptTensors& params) {
  const nlohmann::json& d = run["defaults"];
  const auto flag = [&](const char* key, bool fallback) { return d.value(key, fallback); };
  const auto number = [&](const char* key, double fallback) { return d.value(key, fallback); };
  std::vector<OptimizerParamGroup> param_groups;
  const auto add = [&](std::size_t g, std::unique_ptr<torch::optim::OptimizerOptions> options) {
    TimmOptTensors members;
    for (const auto& k : groups[g]) members.push_back(params[k.get<std::size_t>()]);
    options->set_lr(run["groups"][g]["lr"].get<double>());
    param_groups.emplace_back(members, std::move(options));
  };
  if (run["optimizer"] == "lamb") {
    LambOptions o;
    if (d.contains("betas")) o.betas({d["betas"][0].get<double>(), d["betas"][1].get<double>()});
    o.eps(number("eps", 1e-6)).grad_averaging(flag("grad_averaging", true));
    o.trust_clip(flag("trust_clip", false)).always_adapt(flag("always_adapt", false));
    o.decoupled_decay(flag("decoupled_decay", false));
    o.bias_correction(flag("bias_correction", true));
    if (d.contains("max_grad_norm")) {
      o.max_grad_norm(d["max_grad_norm"].is_null()
                          ? std::nullopt
                          : std::optional<double>(d["max_grad_norm"].get<double>()));
    }
    for (std::size_t g = 0; g < groups.size(); ++g) {
      add(g, std::make_unique<LambOptions>(
                 LambOptions(o).weight_decay(run["groups"][g]["weight_decay"].get<double>())));
    }
    return std::make_unique<Lamb>(param_groups, o);
  }
  RMSpropTFOptions o;
  o.momentum(number("momentum", 0.0)).alpha(number("alpha", 0.9)).eps(number("eps", 1e-10));
  o.centered(flag("centered", false)).decoupled_decay(flag("decoupled_decay", false));
  o.lr_in_momentum(flag("lr_in_momentum", true));
  for (std::size_t g = 0; g < groups.size(); ++g) {
    add(g, std::make_unique<RMSpropTFOptions>(
               RMSpropTFOptions(o).weight_decay(run["groups"][g]["weight_decay"].get<double>())));
  }
  return std::make_unique<RMSpropTF>(param_groups, o);
}

// Step t of a run: the oracle's gradients (none where grads.pt has none) and, for a schedule
// run, the step's LRs and momentum (Lamb: beta1) set as set_hyper_parameters would.
void timm_opt_step(torch::optim::Optimizer& optimizer, const nlohmann::json& run,
                   const TimmOptTensorMap& grads, TimmOptTensors& params, int t) {
  for (std::size_t k = 0; k < params.size(); ++k) {
    const auto it = grads.find(std::to_string(t) + ".p" + std::to_string(k));
    if (it == grads.end()) {
      params[k].mutable_grad().reset();
    } else {
      params[k].mutable_grad() = it->second.clone();
    }
  }
  if (run.contains("lrs")) {
    const double momentum = run["momentum"][t].get<double>();
    auto& groups = optimizer.param_groups();
    for (std::size_t g = 0; g < groups.size(); ++g) {
      groups[g].options().set_lr(run["lrs"][t][g].get<double>());
      if (auto* lamb = dynamic_cast<LambOptions*>(&groups[g].options())) {
        lamb->betas({momentum, std::get<1>(lamb->betas())});
      } else {
        static_cast<RMSpropTFOptions&>(groups[g].options()).momentum(momentum);
      }
    }
  }
  optimizer.step();
}

// The largest difference between `params` and timm's after `step`.
double timm_opt_gap_at(const TimmOptTensors& params, const TimmOptTensorMap& expected, int step) {
  double gap = 0.0;
  for (std::size_t k = 0; k < params.size(); ++k) {
    const torch::Tensor& want = expected.at("s" + std::to_string(step) + ".p" + std::to_string(k));
    REQUIRE(want.sizes() == params[k].sizes());
    gap = std::max(gap, (params[k].detach() - want).abs().max().item<double>());
  }
  return gap;
}

}  // namespace

// Reads the problem timm solved (LTFIT_TIMM_OPTIMIZERS_ORACLE_DIR: problem.json, params.pt,
// grads.pt, expected_RUN.pt), runs each option set for 100 steps, once straight through and once
// saved and loaded (torch::save / torch::load into a fresh optimizer over fresh tensors) at step
// 50, compares both with timm at every checkpoint, and writes ltfit.json for the script.
TEST_CASE("Lamb and RMSpropTF on timm's problem", "[.][timm_optimizers_oracle]") {
  const char* dir = std::getenv("LTFIT_TIMM_OPTIMIZERS_ORACLE_DIR");
  if (dir == nullptr) {
    FAIL(
        "LTFIT_TIMM_OPTIMIZERS_ORACLE_DIR is unset: tests/train/timm_optimizers_oracle.sh sets it");
  }
  const std::string root(dir);
  std::ifstream in(root + "/problem.json");
  const nlohmann::json problem = nlohmann::json::parse(in);
  const TimmOptTensorMap initial = timm_opt_read(root + "/params.pt");
  const TimmOptTensorMap grads = timm_opt_read(root + "/grads.pt");
  const auto checkpoints = problem["checkpoints"].get<std::vector<int>>();
  const int steps = problem["steps"].get<int>(), reload_at = steps / 2;
  nlohmann::json report;
  for (const auto& run : problem["runs"]) {
    const std::string name = run["name"].get<std::string>();
    INFO(name);
    const TimmOptTensorMap expected = timm_opt_read(root + "/expected_" + name + ".pt");
    TimmOptTensors params = timm_opt_clone(timm_opt_initial(initial));
    auto optimizer = timm_opt_make(run, problem["groups"], params);
    TimmOptTensors resumed_params;
    std::unique_ptr<torch::optim::Optimizer> resumed;
    double gap = 0.0, gap_resumed = 0.0;
    for (int t = 0; t < steps; ++t) {
      if (t == reload_at) {
        resumed_params = timm_opt_clone(params);
        resumed = timm_opt_make(run, problem["groups"], resumed_params);
        timm_opt_round_trip(*optimizer, *resumed);
      }
      timm_opt_step(*optimizer, run, grads, params, t);
      if (resumed) timm_opt_step(*resumed, run, grads, resumed_params, t);
      if (std::find(checkpoints.begin(), checkpoints.end(), t + 1) == checkpoints.end()) continue;
      gap = std::max(gap, timm_opt_gap_at(params, expected, t + 1));
      if (resumed)
        gap_resumed = std::max(gap_resumed, timm_opt_gap_at(resumed_params, expected, t + 1));
    }
    WARN(name << ": largest difference from timm " << problem["timm_version"].get<std::string>()
              << " over " << steps << " steps " << gap << " (resumed at step " << reload_at << ": "
              << gap_resumed << ")");
    CHECK(gap < 1e-6);
    CHECK(gap_resumed < 1e-6);
    CHECK(timm_opt_gap(params, resumed_params) == 0.0);  // the round trip loses nothing
    CHECK(timm_opt_gap(params, timm_opt_initial(initial)) >
          1e-2);  // timm's parameters moved, and ours with them
    report[name] = {{"max_difference", gap}, {"max_difference_after_reload", gap_resumed}};
  }
  std::ofstream(root + "/ltfit.json") << report.dump(1);
}
