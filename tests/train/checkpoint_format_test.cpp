// Checkpoints as data (format 3): exact round trips of the optimizer state, scaler, position and
// RNG; Python's torch.load(weights_only=True) reads them ([parity]); TorchScript archives (ltfit's
// old format, or a crafted one whose __setstate__ writes a file) are refused by every command
// without running anything, and converted only with --trust-code; hostile checkpoints end in
// exit 4 within a small memory; a full disk mid-write ends in exit 5 with the previous file kept.
#include <torch/serialize/output-archive.h>
#include <torch/torch.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sys/resource.h>

#include <csignal>
#include <filesystem>

#include "ltfit/formats/torch_archive.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/train/checkpoint.h"
#include "ltfit/train/optimizer.h"
#include "ltfit/train/timm_optimizers.h"
#include "ltfit/util/error.h"
#include "model/archive_builders.h"

namespace {

namespace fs = std::filesystem;
namespace op = ltfit::testing::op;
using Catch::Contains;
using ltfit::testing::run_ltfit;
using ltfit::testing::TempDir;

// Steps of training on seeded random data, so that the optimizer has state.
void train_steps(ltfit::Classifier& model, torch::optim::Optimizer& optimizer, int steps,
                 std::uint64_t seed) {
  torch::manual_seed(seed);
  model->train();
  for (int i = 0; i < steps; ++i) {
    optimizer.zero_grad();
    const torch::Tensor x = torch::randn({4, 3, 32, 32});
    const torch::Tensor y = torch::randint(0, 2, {4});
    torch::nn::functional::cross_entropy(model->forward(x), y).backward();
    optimizer.step();
  }
}

ltfit::CheckpointMeta sample_meta(const std::string& config_yaml = "run: {seed: 7}\n") {
  ltfit::CheckpointMeta meta;
  meta.config_yaml = config_yaml;
  meta.classes = {"cat", "dog"};
  meta.epochs_done = 3;
  meta.global_step = 30;
  meta.accuracy = 0.75;
  meta.valid_loss = 0.1 + 0.2;  // not representable exactly: must come back bit for bit
  meta.position = {1, 2, 3, 1.0 / 3.0, 4};
  meta.best_accuracy = 0.8;
  meta.scaler = {1024.0, 7};
  meta.train_seconds = 12.5;
  return meta;
}

void check_same_meta(const ltfit::CheckpointMeta& a, const ltfit::CheckpointMeta& b) {
  CHECK(a.config_yaml == b.config_yaml);
  CHECK(a.classes == b.classes);
  CHECK(a.epochs_done == b.epochs_done);
  CHECK(a.global_step == b.global_step);
  CHECK(a.accuracy == b.accuracy);
  CHECK(a.valid_loss == b.valid_loss);
  CHECK(a.position == b.position);
  CHECK(a.best_accuracy == b.best_accuracy);
  CHECK(a.scaler.scale == b.scaler.scale);
  CHECK(a.scaler.growth_tracker == b.scaler.growth_tracker);
  CHECK(a.train_seconds == b.train_seconds);
  CHECK(a.decode_failures == b.decode_failures);
}

void check_same_parameters(ltfit::Classifier& a, ltfit::Classifier& b) {
  const auto pb = b->named_parameters();
  for (const auto& item : a->named_parameters()) {
    INFO(item.key());
    CHECK(torch::equal(item.value(), pb[item.key()]));
  }
}

// Two tensors both undefined, or equal bit for bit.
bool same_tensor(const torch::Tensor& a, const torch::Tensor& b) {
  return a.defined() == b.defined() && (!a.defined() || torch::equal(a, b));
}

// One parameter's state in `b` equals `a`'s (AdamW, SGD, Lamb or RMSpropTF).
void check_same_param_state(torch::optim::OptimizerParamState& a,
                            torch::optim::OptimizerParamState& b) {
  if (auto* adam = dynamic_cast<torch::optim::AdamWParamState*>(&a)) {
    auto& other = dynamic_cast<torch::optim::AdamWParamState&>(b);
    CHECK(adam->step() == other.step());
    CHECK(torch::equal(adam->exp_avg(), other.exp_avg()));
    CHECK(torch::equal(adam->exp_avg_sq(), other.exp_avg_sq()));
  } else if (auto* lamb = dynamic_cast<ltfit::LambParamState*>(&a)) {
    auto& other = dynamic_cast<ltfit::LambParamState&>(b);
    CHECK(torch::equal(lamb->exp_avg(), other.exp_avg()));
    CHECK(torch::equal(lamb->exp_avg_sq(), other.exp_avg_sq()));
  } else if (auto* rms = dynamic_cast<ltfit::RMSpropTFParamState*>(&a)) {
    auto& other = dynamic_cast<ltfit::RMSpropTFParamState&>(b);
    CHECK(rms->step() == other.step());
    CHECK(same_tensor(rms->square_avg(), other.square_avg()));
    CHECK(same_tensor(rms->momentum_buffer(), other.momentum_buffer()));
    CHECK(same_tensor(rms->grad_avg(), other.grad_avg()));
  } else {
    auto& sgd = dynamic_cast<torch::optim::SGDParamState&>(a);
    auto& other = dynamic_cast<torch::optim::SGDParamState&>(b);
    CHECK(torch::equal(sgd.momentum_buffer(), other.momentum_buffer()));
  }
}

// Every parameter's state in `b` equals `a`'s, parameters matched by position; and Lamb's
// per-group step.
void check_same_optimizer_state(torch::optim::Optimizer& a, torch::optim::Optimizer& b) {
  REQUIRE(a.param_groups().size() == b.param_groups().size());
  for (std::size_t g = 0; g < a.param_groups().size(); ++g) {
    CHECK(a.param_groups()[g].options().get_lr() == b.param_groups()[g].options().get_lr());
    if (auto* lamb = dynamic_cast<ltfit::LambOptions*>(&a.param_groups()[g].options())) {
      CHECK(lamb->step() ==
            dynamic_cast<ltfit::LambOptions&>(b.param_groups()[g].options()).step());
    }
    const auto& pa = a.param_groups()[g].params();
    const auto& pb = b.param_groups()[g].params();
    REQUIRE(pa.size() == pb.size());
    for (std::size_t i = 0; i < pa.size(); ++i) {
      const auto sa = a.state().find(pa[i].unsafeGetTensorImpl());
      const auto sb = b.state().find(pb[i].unsafeGetTensorImpl());
      REQUIRE((sa == a.state().end()) == (sb == b.state().end()));
      if (sa != a.state().end()) check_same_param_state(*sa->second, *sb->second);
    }
  }
}

// Three parameters; Lamb's first group (the first) gets no gradients, as a frozen layer group.
std::vector<torch::Tensor> timm_test_params(std::uint64_t seed) {
  torch::manual_seed(seed);
  return {torch::randn({3, 4}).requires_grad_(), torch::randn({5}).requires_grad_(),
          torch::randn({2, 2}).requires_grad_()};
}

// timm's Lamb over two groups ({p0}, {p1, p2}, the second without weight decay), or a centered
// RMSpropTF with momentum and weight decay (so that all three of its buffers exist).
std::unique_ptr<torch::optim::Optimizer> timm_test_optimizer(bool lamb,
                                                             const std::vector<torch::Tensor>& p) {
  if (!lamb) {
    return std::make_unique<ltfit::RMSpropTF>(
        p, ltfit::RMSpropTFOptions(1e-2).centered(true).momentum(0.9).weight_decay(0.01));
  }
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<torch::Tensor>{p[0]}, std::make_unique<ltfit::LambOptions>(2e-2));
  groups.emplace_back(
      std::vector<torch::Tensor>{p[1], p[2]},
      std::make_unique<ltfit::LambOptions>(ltfit::LambOptions(1e-2).weight_decay(0)));
  return std::make_unique<ltfit::Lamb>(groups, ltfit::LambOptions(1e-2));
}

// `steps` steps on seeded random gradients; with `skip_first`, p[0] gets none.
void timm_test_steps(torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& p,
                     int steps, std::uint64_t seed, bool skip_first) {
  torch::manual_seed(seed);
  for (int i = 0; i < steps; ++i) {
    optimizer.zero_grad();
    for (std::size_t k = skip_first ? 1 : 0; k < p.size(); ++k) {
      p[k].mutable_grad() = torch::randn_like(p[k]);
    }
    optimizer.step();
  }
}

std::string tiny_config(const fs::path& data) {
  return "run: {name: tiny, seed: 5}\n"
         "data: {root: " +
         data.string() +
         ", image_size: 32, batch_size: 8, workers: 2}\n"
         "model: {arch: resnet18, pretrained: none, head: linear}\n"
         "train: {recipe: one_cycle, epochs: 1, lr: 2.0e-3, device: cpu}\n"
         "eval: {tta: false}\n";
}

// What ltfit wrote before format 3: a LibTorch serialize archive (TorchScript), as the old
// save_checkpoint did.
void write_old_checkpoint(const std::string& path, ltfit::Classifier& model,
                          torch::optim::Optimizer& optimizer, const ltfit::CheckpointMeta& meta) {
  torch::serialize::OutputArchive archive;
  archive.write("format_version", c10::IValue(std::int64_t(2)));
  archive.write("config_yaml", c10::IValue(meta.config_yaml));
  archive.write("classes", c10::IValue(c10::List<std::string>(meta.classes)));
  archive.write("epochs_done", c10::IValue(std::int64_t(meta.epochs_done)));
  archive.write("global_step", c10::IValue(meta.global_step));
  archive.write("accuracy", c10::IValue(meta.accuracy));
  archive.write("valid_loss", c10::IValue(meta.valid_loss));
  const auto& p = meta.position;
  archive.write("position",
                c10::IValue(c10::List<std::int64_t>({p.stage, p.epoch_in_stage, p.batch_in_epoch,
                                                     p.loss_count, meta.scaler.growth_tracker})));
  archive.write("position_real",
                c10::IValue(c10::List<double>(
                    {p.loss_avg, meta.best_accuracy, meta.scaler.scale, meta.train_seconds})));
  torch::serialize::OutputArchive weights, state, rng;
  for (const auto& item : model->named_parameters()) weights.write(item.key(), item.value());
  for (const auto& item : model->named_buffers()) weights.write(item.key(), item.value(), true);
  archive.write("model", weights);
  optimizer.save(state);
  archive.write("optimizer", state);
  rng.write("cpu", ltfit::capture_rng_states().cpu, /*is_buffer=*/true);
  archive.write("rng", rng);
  archive.save_to(path);
}

bool python_torch() {
  static const bool available = std::system("python3 -c 'import torch' >/dev/null 2>&1") == 0;
  return available;
}

std::string oracle() {
  return (ltfit::testing::source_dir() / "tests/train/checkpoint_oracle.py").string();
}

// Restores RLIMIT_FSIZE and SIGXFSZ on destruction. With SIGXFSZ ignored, a write past the
// limit fails with EFBIG, which ltfit treats like a full disk (ENOSPC).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    const struct rlimit limit = {bytes, saved_.rlim_max};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    previous_ = std::signal(SIGXFSZ, SIG_IGN);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, previous_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  struct rlimit saved_ {};
  void (*previous_)(int) = nullptr;
};

std::vector<std::string> temp_files(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().extension() == ".tmp") found.push_back(e.path().string());
  }
  return found;
}

}  // namespace

TEST_CASE("checkpoints restore optimizer, scaler, position and RNG exactly",
          "[train][checkpoint]") {
  for (const char* name : {"adamw", "sgd", "lamb", "rmsprop"}) {
    INFO(name);
    TempDir dir;
    ltfit::OptimizerConfig config;
    config.name = ltfit::parse_optimizer_kind(name);
    torch::manual_seed(1);
    ltfit::Classifier a = ltfit::make_classifier("resnet18", 2);
    auto opt_a = ltfit::make_optimizer(config, a->layer_group_parameters());
    train_steps(a, *opt_a, 2, 1);
    const std::string path = (dir.path() / "a.ckpt").string();
    torch::manual_seed(42);
    const torch::Tensor rng_saved = ltfit::capture_rng_states().cpu.clone();
    ltfit::save_checkpoint(path, a, opt_a.get(), sample_meta());
    CHECK_FALSE(fs::exists(path + ".tmp"));
    torch::rand({10});  // moves the generator on

    torch::manual_seed(2);
    ltfit::Classifier b = ltfit::make_classifier("resnet18", 2);
    auto opt_b = ltfit::make_optimizer(config, b->layer_group_parameters());
    check_same_meta(ltfit::load_checkpoint(path, b, opt_b.get(), /*restore_rng=*/true),
                    sample_meta());
    CHECK(torch::equal(ltfit::capture_rng_states().cpu, rng_saved));
    check_same_meta(ltfit::read_checkpoint_meta(path), sample_meta());
    check_same_parameters(a, b);
    check_same_optimizer_state(*opt_a, *opt_b);
    // And training goes on bit for bit.
    train_steps(a, *opt_a, 1, 9);
    train_steps(b, *opt_b, 1, 9);
    check_same_parameters(a, b);
  }
}

TEST_CASE("Lamb's and a centered RMSpropTF's state come back bit for bit, frozen groups' too",
          "[train][checkpoint]") {
  for (const bool lamb : {true, false}) {
    INFO((lamb ? "Lamb" : "RMSpropTF"));
    const std::vector<torch::Tensor> pa = timm_test_params(3);
    auto a = timm_test_optimizer(lamb, pa);
    timm_test_steps(*a, pa, 3, 1, lamb);
    if (lamb) {  // the frozen group's step advanced too (timm's per-group step)
      CHECK(dynamic_cast<ltfit::LambOptions&>(a->param_groups()[0].options()).step() == 3);
      CHECK(a->state().count(pa[0].unsafeGetTensorImpl()) == 0);
    } else {
      auto& s =
          dynamic_cast<ltfit::RMSpropTFParamState&>(*a->state().at(pa[0].unsafeGetTensorImpl()));
      CHECK((s.momentum_buffer().defined() && s.grad_avg().defined()));
    }
    std::vector<torch::Tensor> pb;
    for (const auto& p : pa) pb.push_back(p.detach().clone().requires_grad_());
    auto b = timm_test_optimizer(lamb, pb);
    ltfit::load_optimizer_state(*b, ltfit::save_optimizer_state(*a));
    check_same_optimizer_state(*a, *b);
    // And the steps go on bit for bit.
    timm_test_steps(*a, pa, 2, 9, lamb);
    timm_test_steps(*b, pb, 2, 9, lamb);
    for (std::size_t k = 0; k < pa.size(); ++k) CHECK(torch::equal(pa[k], pb[k]));
    check_same_optimizer_state(*a, *b);
  }
}

TEST_CASE("a checkpoint whose optimizer state does not fit the optimizer changes nothing",
          "[train][checkpoint]") {
  TempDir dir;
  ltfit::Classifier a = ltfit::make_classifier("resnet18", 2);
  auto adamw = ltfit::make_optimizer({}, a->layer_group_parameters());
  train_steps(a, *adamw, 1, 1);
  const std::string path = (dir.path() / "a.ckpt").string();
  ltfit::save_checkpoint(path, a, adamw.get(), sample_meta());
  ltfit::Classifier b = ltfit::make_classifier("resnet18", 2);
  ltfit::OptimizerConfig sgd_config;
  sgd_config.name = ltfit::OptimizerKind::kSgd;
  auto sgd = ltfit::make_optimizer(sgd_config, b->layer_group_parameters());
  const torch::Tensor before = b->named_parameters()["conv1.weight"].clone();
  CHECK_THROWS_WITH(ltfit::load_checkpoint(path, b, sgd.get()),
                    Contains("AdamW") && Contains("SGD"));
  CHECK(torch::equal(before, b->named_parameters()["conv1.weight"]));
  CHECK(sgd->state().empty());
}

TEST_CASE("torch.load(weights_only=True) reads ltfit checkpoints, mmap too",
          "[parity][checkpoint]") {
  if (!python_torch()) {
    WARN("SKIPPED: Python torch is not installed (the oracle of this test)");
    return;
  }
  TempDir dir;
  ltfit::Classifier model = ltfit::make_classifier("resnet18", 2);
  auto optimizer = ltfit::make_optimizer({}, model->layer_group_parameters());
  train_steps(model, *optimizer, 1, 3);
  const std::string path = (dir.path() / "a.ckpt").string();
  ltfit::save_checkpoint(path, model, optimizer.get(), sample_meta());
  const std::string json_path = (dir.path() / "a.json").string();
  const auto [status, output] =
      ltfit::testing::run_command("python3 " + oracle() + " load " + path + " " + json_path);
  INFO(output);
  REQUIRE(status == 0);
  const auto got = nlohmann::json::parse(ltfit::testing::read_file(json_path));
  CHECK(got["format"] == "ltfit.checkpoint");
  CHECK(got["format_version"] == 3);
  CHECK(got["classes"] == nlohmann::json({"cat", "dog"}));
  CHECK(got["valid_loss"].get<double>() == 0.1 + 0.2);
  CHECK(got["position"]["loss_avg"].get<double>() == 1.0 / 3.0);
  CHECK(got["scaler"]["_growth_tracker"] == 7);
  CHECK(got["__model_type__"] == "OrderedDict");
  for (const auto& item : model->named_parameters()) {
    INFO(item.key());
    const auto& t = got["model"][item.key()];
    CHECK(t["shape"].get<std::vector<std::int64_t>>() == item.value().sizes().vec());
    CHECK(t["sum"].get<double>() ==
          Approx(item.value().to(torch::kFloat64).sum().item<double>()).epsilon(1e-12));
  }
  CHECK(got["optimizer"]["param_groups"].size() == optimizer->param_groups().size());
  CHECK(got["optimizer"]["state"].size() == optimizer->state().size());
  CHECK(got["rng"]["cpu"]["dtype"] == "uint8");

  // zip64 fields and end records (what a > 4 GiB checkpoint gets) read in Python too.
  ltfit::TorchArchiveWriter writer;
  writer.pickle().empty_dict();
  writer.pickle().mark();
  writer.pickle().string("w");
  writer.tensor(torch::arange(10, torch::kFloat64));
  writer.pickle().set_items();
  const std::string zip64 = (dir.path() / "zip64.pth").string();
  ltfit::testing::write_file(zip64, writer.to_bytes(/*force_zip64=*/true));
  const auto [status64, output64] =
      ltfit::testing::run_command("python3 " + oracle() + " load " + zip64 + " " + json_path);
  INFO(output64);
  CHECK(status64 == 0);
}

TEST_CASE(
    "old TorchScript checkpoints: every command exits 4 naming convert-checkpoint, which "
    "converts them only with --trust-code",
    "[cli][checkpoint]") {
  TempDir dir;
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/data --train 8 --valid 4").exit_code == 0);
  ltfit::Classifier model = ltfit::make_classifier("resnet18", 2);
  auto optimizer = ltfit::make_optimizer({}, model->layer_group_parameters());
  train_steps(model, *optimizer, 1, 4);
  const std::string old_path = (dir.path() / "old.ckpt").string();
  write_old_checkpoint(old_path, model, *optimizer, sample_meta(tiny_config(dir.path() / "data")));
  const std::string image = (ltfit::testing::source_dir() / "tests/fixtures/rgb.bmp").string();

  for (const std::string& args :
       {"evaluate --checkpoint " + old_path, "predict --checkpoint " + old_path + " " + image,
        "export --checkpoint " + old_path + " --out " + dir.str() + "/x.pth",
        "train --resume " + old_path}) {
    INFO(args);
    const auto r = run_ltfit(args);
    CHECK(r.exit_code == 4);
    CHECK_THAT(r.output, Contains("TorchScript") && Contains("ltfit convert-checkpoint "
                                                             "--trust-code " +
                                                             old_path));
  }

  const std::string new_path = (dir.path() / "new.ckpt").string();
  const auto refused = run_ltfit("convert-checkpoint " + old_path + " " + new_path);
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.output, Contains("executes code") && Contains("--trust-code"));
  CHECK_FALSE(fs::exists(new_path));
  const auto converted = run_ltfit("convert-checkpoint --trust-code " + old_path + " " + new_path);
  INFO(converted.output);
  REQUIRE(converted.exit_code == 0);

  ltfit::Classifier loaded = ltfit::make_classifier("resnet18", 2);
  auto loaded_optimizer = ltfit::make_optimizer({}, loaded->layer_group_parameters());
  check_same_meta(ltfit::load_checkpoint(new_path, loaded, loaded_optimizer.get()),
                  sample_meta(tiny_config(dir.path() / "data")));
  check_same_parameters(model, loaded);
  check_same_optimizer_state(*optimizer, *loaded_optimizer);
  // --out: outside a run directory evaluate would write predictions.csv where the test runs.
  const auto evaluated =
      run_ltfit("evaluate --checkpoint " + new_path + " --out " + dir.str() + "/eval");
  CHECK(evaluated.exit_code == 0);
  CHECK(fs::exists(dir.path() / "eval/predictions.csv"));
}

TEST_CASE("a TorchScript archive whose __setstate__ writes a file is refused and runs nothing",
          "[parity][cli][checkpoint]") {
  if (!python_torch()) {
    WARN("SKIPPED: Python torch is not installed (it makes the TorchScript archive)");
    return;
  }
  TempDir dir;
  const fs::path marker = dir.path() / "marker";
  const std::string archive = (dir.path() / "evil.ckpt").string();
  const auto [status, output] = ltfit::testing::run_command(
      "python3 " + oracle() + " torchscript " + archive + " " + marker.string());
  INFO(output);
  REQUIRE(status == 0);
  REQUIRE_FALSE(fs::exists(marker));
  const std::string image = (ltfit::testing::source_dir() / "tests/fixtures/rgb.bmp").string();
  for (const std::string& args :
       {"evaluate --checkpoint " + archive, "predict --checkpoint " + archive + " " + image,
        "export --checkpoint " + archive + " --out " + dir.str() + "/x.pth",
        "train --resume " + archive,
        "predict --arch resnet18 --weights " + archive + " " + image}) {
    INFO(args);
    const auto r = run_ltfit(args);
    CHECK(r.exit_code == 4);
    CHECK_THAT(r.output, Contains("TorchScript"));
    CHECK_FALSE(fs::exists(marker));
  }
  // The control: loading it the old way (convert-checkpoint --trust-code) does run its code.
  run_ltfit("convert-checkpoint --trust-code " + archive + " " + dir.str() + "/new.ckpt");
  CHECK(fs::exists(marker));
}

TEST_CASE("a hostile checkpoint (a stride-0 view claiming 5 GB) exits 4 without allocating it",
          "[cli][checkpoint][hostile]") {
  TempDir dir;
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/data --train 8 --valid 4").exit_code == 0);
  const auto number = [](const char* key, std::int32_t v) { return op::str(key) + op::int32(v); };
  std::string pkl =
      op::kProto2 + "}(" + op::str("format") + op::str("ltfit.checkpoint") +
      number("format_version", 3) + op::str("config_yaml") +
      op::str(tiny_config(dir.path() / "data")) + op::str("classes") + "](" + op::str("cat") +
      op::str("dog") + "e" + number("epochs_done", 1) + number("global_step", 3) +
      number("accuracy", 0) + number("valid_loss", 0) + number("best_accuracy", 0) +
      number("train_seconds", 0) + op::str("position") + "}(" + number("stage", 0) +
      number("epoch_in_stage", 1) + number("batch_in_epoch", 0) + number("loss_avg", 0) +
      number("loss_count", 0) + "u" + op::str("scaler") + "}(" + number("scale", 1) +
      number("_growth_tracker", 0) + "u" + op::str("model") +
      op::global("collections", "OrderedDict") + ")R(" + op::str("conv1.weight") +
      op::float_tensor("0", 1, 0, {1'300'000'000}, {0}) + "u" + op::str("optimizer") + "N" + "u.";
  const std::string path = (dir.path() / "hostile.ckpt").string();
  ltfit::testing::write_file(path,
                             ltfit::testing::torch_zip(pkl, {{"data/0", std::string(4, '\0')}}));
  const auto r =
      ltfit::testing::run_ltfit_capped("evaluate --checkpoint " + path, std::uint64_t(4) << 30);
  INFO(r.output);
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output, Contains("conv1.weight") && Contains("[1300000000]"));
  CHECK(r.peak_rss_kib < 1200 * 1024);

  // Truncated anywhere, a real checkpoint is refused (exit 4), never half loaded.
  ltfit::Classifier model = ltfit::make_classifier("resnet18", 2);
  const std::string good = (dir.path() / "good.ckpt").string();
  ltfit::save_checkpoint(good, model, nullptr, sample_meta());
  const std::string bytes = ltfit::testing::read_file(good);
  for (const double fraction : {0.0, 0.001, 0.5, 0.999}) {
    const std::string cut = (dir.path() / "cut.ckpt").string();
    ltfit::testing::write_file(cut, bytes.substr(0, std::size_t(double(bytes.size()) * fraction)));
    ltfit::Classifier other = ltfit::make_classifier("resnet18", 2);
    CHECK_THROWS_AS(ltfit::load_checkpoint(cut, other, nullptr), ltfit::CheckpointError);
  }
}

TEST_CASE("a full disk while a checkpoint is written: exit 5, no partial file, previous kept",
          "[train][checkpoint][hostile]") {
  TempDir dir;
  ltfit::Classifier model = ltfit::make_classifier("resnet18", 2);
  const std::string path = (dir.path() / "checkpoints" / "last.ckpt").string();
  ltfit::save_checkpoint(path, model, nullptr, sample_meta());
  const std::string previous = ltfit::testing::read_file(path);
  {
    torch::NoGradGuard no_grad;
    model->named_parameters()["conv1.weight"].fill_(1.0f);
  }
  std::string message;
  int code = 0;
  {
    const FileSizeLimit limit(previous.size() / 2);
    try {
      ltfit::save_checkpoint(path, model, nullptr, sample_meta());
    } catch (const ltfit::Error& e) {
      message = e.what();
      code = static_cast<int>(e.exit_code());
    }
  }
  INFO(message);
  CHECK(code == 5);
  CHECK_THAT(message,
             Contains(path) && Contains("File too large") && Contains("MiB") && Contains("free"));
  CHECK(temp_files(dir.path()).empty());
  CHECK(ltfit::testing::read_file(path) == previous);

  // The same through `ltfit train`, whose first checkpoint (~135 MB) meets a 20 MB file limit.
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/data --train 8 --valid 4").exit_code == 0);
  ltfit::testing::write_file(dir.path() / "c.yaml", tiny_config(dir.path() / "data"));
  const auto r =
      run_ltfit("train --config " + dir.str() + "/c.yaml --run-dir " + dir.str() + "/run",
                "ulimit -f 20000; trap '' XFSZ;");
  INFO(r.output);
  CHECK(r.exit_code == 5);  // was SIGABRT (134)
  // The first epoch is a new best: best.ckpt is written first, before any numbered checkpoint
  // records it, so the file named is best.ckpt.
  CHECK_THAT(r.output, Contains(dir.str() + "/run/checkpoints/best.ckpt") && Contains("free"));
  CHECK(temp_files(dir.path() / "run").empty());
}

TEST_CASE("a checkpoint with a tensor of another dtype, or one the model lacks, is refused",
          "[train][checkpoint]") {
  TempDir dir;
  const std::string path = (dir.path() / "x.ckpt").string();
  {  // a float64 running mean where the model keeps float32
    ltfit::Classifier saved = ltfit::make_classifier("resnet18", 2);
    auto buffer = saved->named_buffers()["bn1.running_mean"];
    buffer.set_data(buffer.data().to(torch::kDouble));
    ltfit::save_checkpoint(path, saved, nullptr, sample_meta());
    ltfit::Classifier loaded = ltfit::make_classifier("resnet18", 2);
    const auto before = loaded->parameters()[0].clone();
    CHECK_THROWS_WITH(ltfit::load_checkpoint(path, loaded, nullptr),
                      Contains("bn1.running_mean") && Contains("Double") && Contains("Float"));
    CHECK(torch::equal(before, loaded->parameters()[0]));  // nothing half loaded
  }
  {  // a tensor the model does not have: refused as load_state_dict(strict=True) does
    ltfit::Classifier saved = ltfit::make_classifier("resnet18", 2);
    saved->register_buffer("smuggled", torch::zeros({3}));
    ltfit::save_checkpoint(path, saved, nullptr, sample_meta());
    ltfit::Classifier loaded = ltfit::make_classifier("resnet18", 2);
    CHECK_THROWS_WITH(ltfit::load_checkpoint(path, loaded, nullptr),
                      Contains("does not have: smuggled"));
  }
}

TEST_CASE("checkpoints carry the phase totals, weights-only ones say so and refuse a resume",
          "[train][checkpoint]") {
  TempDir dir;
  ltfit::Classifier model = ltfit::make_classifier("resnet18", 2);
  auto optimizer = ltfit::make_optimizer({}, model->layer_group_parameters());
  ltfit::CheckpointMeta meta = sample_meta();
  for (int i = 0; i < ltfit::kPhaseCount; ++i) meta.phase_seconds[i] = 0.5 + i;
  meta.decode_failures = {{3, 17}, {3, 17, 40'000'000'000}};
  ltfit::HookState ema{"ema",
                       2,
                       {{"weights", torch::arange(6, torch::kFloat).view({2, 3})},
                        {"count", torch::tensor({7}, torch::kLong)}},
                       {{"decay", 0.999}, {"best", -1.5e300}}};
  meta.hook_states = {ema, ltfit::HookState{"plain", 1, {}, {}}};
  const std::string full = (dir.path() / "full.ckpt").string();
  ltfit::save_checkpoint(full, model, optimizer.get(), meta);
  const ltfit::CheckpointMeta read = ltfit::read_checkpoint_meta(full);
  CHECK(read.phase_seconds == meta.phase_seconds);
  CHECK(read.decode_failures == meta.decode_failures);
  REQUIRE(read.hook_states.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    const ltfit::HookState &got = read.hook_states[i], &want = meta.hook_states[i];
    CHECK(got.name == want.name);
    CHECK(got.version == want.version);
    CHECK(got.scalars == want.scalars);
    REQUIRE(got.tensors.size() == want.tensors.size());
    for (const auto& [key, tensor] : want.tensors) {
      REQUIRE(got.tensors.count(key) == 1);
      CHECK(got.tensors.at(key).scalar_type() == tensor.scalar_type());
      CHECK(torch::equal(got.tensors.at(key), tensor));
    }
  }
  CHECK_FALSE(read.weights_only);

  const std::string weights = (dir.path() / "weights.ckpt").string();
  ltfit::save_checkpoint(weights, model, nullptr, meta);
  CHECK(ltfit::read_checkpoint_meta(weights).weights_only);
  CHECK(fs::file_size(weights) < fs::file_size(full));
  CHECK(ltfit::load_checkpoint(weights, model, nullptr).phase_seconds == meta.phase_seconds);
  try {
    ltfit::load_checkpoint(weights, model, optimizer.get(), /*restore_rng=*/true);
    FAIL("a weights-only checkpoint loaded an optimizer");
  } catch (const ltfit::CheckpointError& e) {
    CHECK_THAT(e.what(), Contains("weights only"));
    CHECK_THAT(e.hint(), Contains("last.ckpt") && Contains("--init-from " + weights));
  }
}

TEST_CASE(
    "a checkpoint written before phase_seconds, decode_failures and hook_states existed loads "
    "with their defaults",
    "[parity][checkpoint]") {
  if (!python_torch()) {
    WARN("SKIPPED: Python torch is not installed (the oracle of this test)");
    return;
  }
  TempDir dir;
  ltfit::Classifier model = ltfit::make_classifier("resnet18", 2);
  auto optimizer = ltfit::make_optimizer({}, model->layer_group_parameters());
  train_steps(model, *optimizer, 1, 3);
  ltfit::CheckpointMeta meta = sample_meta();
  meta.phase_seconds.fill(2.0);
  meta.decode_failures.found = {1, 2};
  meta.hook_states = {{"ema", 1, {{"w", torch::ones({3})}}, {{"decay", 0.9}}}};
  const std::string path = (dir.path() / "new.ckpt").string();
  ltfit::save_checkpoint(path, model, optimizer.get(), meta);
  const std::string half = (dir.path() / "half.ckpt").string();
  const std::string third = (dir.path() / "third.ckpt").string();
  const std::string old = (dir.path() / "old.ckpt").string();
  // torch.load(weights_only=True) reads every entry, hook_states included, on the way.
  const auto [status, output] = ltfit::testing::run_command(
      "python3 " + oracle() + " strip " + path + " " + half + " phase_seconds && python3 " +
      oracle() + " strip " + half + " " + third + " decode_failures && python3 " + oracle() +
      " strip " + third + " " + old + " hook_states");
  INFO(output);
  REQUIRE(status == 0);
  ltfit::Classifier loaded = ltfit::make_classifier("resnet18", 2);
  auto loaded_optimizer = ltfit::make_optimizer({}, loaded->layer_group_parameters());
  const ltfit::CheckpointMeta got =
      ltfit::load_checkpoint(old, loaded, loaded_optimizer.get(), /*restore_rng=*/true);
  check_same_meta(got, sample_meta());
  CHECK(got.phase_seconds == ltfit::PhaseSeconds{});
  CHECK(got.decode_failures == ltfit::DecodeFailures{});
  CHECK(got.hook_states.empty());
  CHECK(ltfit::read_checkpoint_meta(third).hook_states.size() == 1);
  check_same_parameters(model, loaded);
}
