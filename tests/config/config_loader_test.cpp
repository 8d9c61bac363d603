// Tests of the YAML config loader: defaults, every class of user mistake (each must name the
// file, the key path and the line), --set overrides, the to_yaml round trip, and the shipped
// configs in configs/.
#include "ltfit/config/config_loader.h"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>

#include "ltfit/util/choices.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace ltfit {
namespace {

using Catch::Matchers::Contains;

// The ConfigError message of `action`; fails the test when nothing (or something else) is thrown.
std::string config_error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const ConfigError& e) {
    CHECK(e.exit_code() == ExitCode::kUsage);
    return e.what();
  }
  FAIL("expected a ConfigError");
  return "";
}

// Loads `yaml` from a real file named test.yaml; returns the error message.
std::string load_error(const std::string& yaml, const std::vector<Override>& overrides = {}) {
  testing::TempDir dir;
  const std::string path = (dir.path() / "test.yaml").string();
  testing::write_file(path, yaml);
  return config_error_of([&] { load_config(path, overrides); });
}

std::string error_of_string(const std::string& yaml, const std::vector<Override>& overrides = {}) {
  return config_error_of([&] { load_config_from_string(yaml, "t.yaml", overrides); });
}

TEST_CASE("an empty config file gives every default", "[config]") {
  testing::TempDir dir;
  const auto path = dir.path() / "empty.yaml";
  testing::write_file(path, "");
  const Config config = load_config(path.string());
  Config expected;
  expected.source = path.string();
  expected.run.name = "empty";  // a file that names no run names it after itself
  CHECK(config == expected);
  CHECK(config.data.batch_size == 16);
  CHECK(config.model.arch == "resnet34");
  CHECK_FALSE(config.train.time_limit_seconds.has_value());
}

TEST_CASE("sections left empty keep their defaults, given keys replace them", "[config]") {
  const Config config = load_config_from_string("run:\ndata:\n  batch_size: 8\n", "t.yaml");
  CHECK(config.run == RunConfig{});
  CHECK(config.data.batch_size == 8);
  CHECK(config.data.image_size == 224);
}

TEST_CASE("unknown keys are errors with a suggestion, at every level", "[config]") {
  SECTION("top level") {
    const std::string message = load_error("run:\n  seed: 1\ntrian:\n  epochs: 2\n");
    CHECK_THAT(message, Contains("test.yaml:3: trian: unknown key; did you mean 'train'?"));
  }
  SECTION("nested") {
    const std::string message = load_error("data:\n  image_size: 64\n  batchsize: 8\n");
    CHECK_THAT(message, Contains("test.yaml:3: data.batchsize: unknown key"));
    CHECK_THAT(message, Contains("did you mean 'batch_size'?"));
  }
  SECTION("two levels down") {
    const std::string message = error_of_string("train:\n  optimizer:\n    bettas: [0.9, 0.9]\n");
    CHECK_THAT(message, Contains("t.yaml:3: train.optimizer.bettas: unknown key"));
    CHECK_THAT(message, Contains("did you mean 'betas'?"));
  }
  SECTION("no close match lists the valid keys") {
    const std::string message = error_of_string("eval:\n  zzzzzzzz: 1\n");
    CHECK_THAT(message, Contains("eval.zzzzzzzz: unknown key (valid keys under 'eval': tta, "));
  }
}

TEST_CASE("values of the wrong type are errors naming key, line and value", "[config]") {
  CHECK_THAT(error_of_string("data:\n  batch_size: lots\n"),
             Contains("t.yaml:2: data.batch_size: expected an integer, got lots"));
  CHECK_THAT(error_of_string("data:\n  batch_size: 16.5\n"),
             Contains("t.yaml:2: data.batch_size: expected an integer, got 16.5"));
  CHECK_THAT(error_of_string("data:\n  batch_size: true\n"),
             Contains("data.batch_size: expected an integer, got true"));
  CHECK_THAT(error_of_string("data:\n  batch_size: '16'\n"),
             Contains("data.batch_size: expected an integer, got '16'"));
  CHECK_THAT(error_of_string("data:\n  image_size: {a: 1}\n"),
             Contains("t.yaml:2: data.image_size: expected an integer, got a map"));
  CHECK_THAT(error_of_string("data:\n  augment:\n    flip: yes\n"),
             Contains("t.yaml:3: data.augment.flip: expected true or false, got yes"));
  CHECK_THAT(error_of_string("model:\n  arch: [resnet18]\n"),
             Contains("t.yaml:2: model.arch: expected a string, got a list"));
  CHECK_THAT(error_of_string("train:\n  lr: fast\n"),
             Contains("t.yaml:2: train.lr: expected a number or a list [low, high], got fast"));
  CHECK_THAT(error_of_string("data: 5\n"),
             Contains("t.yaml:1: data: expected a map with keys root, layout"));
  CHECK_THAT(error_of_string("train:\n  time_limit: soon\n"),
             Contains("t.yaml:2: train.time_limit: expected a duration like 5h50m"));
  CHECK_THAT(error_of_string("data:\n  workers: many\n"),
             Contains("data.workers: expected auto or an integer from 1 to 256, got many"));
  CHECK_THAT(error_of_string("data:\n  max_pixels: -1\n"),
             Contains("t.yaml:2: data.max_pixels: expected a number of pixels (an integer >= 0), "
                      "or null for no limit, got -1"));
  CHECK_THAT(error_of_string("data:\n  formats: jpeg\n"),
             Contains("t.yaml:2: data.formats: expected a list of image formats"));
}

TEST_CASE("data: batch size, worker bound, pixel budget and formats", "[config]") {
  const Config defaults = load_config_from_string("", "t.yaml");
  CHECK(defaults.data.max_pixels == 89'478'485);  // PIL's Image.MAX_IMAGE_PIXELS
  CHECK(defaults.data.formats == std::vector<std::string>{"jpeg", "png", "webp", "bmp", "tiff"});
  CHECK(load_config_from_string("data: {max_pixels: null}", "t.yaml").data.max_pixels == 0);
  CHECK(load_config_from_string("data: {max_pixels: 0}", "t.yaml").data.max_pixels == 0);
  CHECK(load_config_from_string("data: {formats: [png, hdr]}", "t.yaml").data.formats ==
        std::vector<std::string>{"png", "hdr"});
  CHECK(load_config_from_string("data: {workers: 256, batch_size: 2}", "t.yaml").data.workers ==
        256);
  // A training batch of one crashes BatchNorm: rejected at load, before anything runs.
  CHECK_THAT(error_of_string("data:\n  batch_size: 1\n"),
             Contains("t.yaml:2: data.batch_size: expected an integer >= 2 (BatchNorm needs at "
                      "least 2 images per training batch), got 1"));
  CHECK_THAT(
      error_of_string("data:\n  workers: 257\n"),
      Contains("t.yaml:2: data.workers: expected auto or an integer from 1 to 256, got 257"));
  CHECK_THAT(error_of_string("data:\n  workers: 100000000\n"),
             Contains("data.workers: expected auto or an integer from 1 to 256"));
  CHECK_THAT(error_of_string("data:\n  workers: -1\n"), Contains("data.workers: expected"));
  try {
    load_config_from_string("data:\n  formats: [jpeg, jpg]\n", "t.yaml");
    FAIL("an unknown format was accepted");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Contains("t.yaml:2: data.formats: expected a non-empty list of image "
                                  "formats from jpeg, png, webp, bmp, tiff, pnm, pfm, sunras, "
                                  "hdr, exr, jpeg2000, got a list [jpeg, jpg]"));
    CHECK_THAT(e.hint(), Contains("'jpg' is not one of them; did you mean 'jpeg'?"));
  }
  CHECK_THAT(error_of_string("data:\n  formats: []\n"),
             Contains("data.formats: expected a non-empty list of image formats"));
}

TEST_CASE("out-of-range values are errors naming key, line and value as written", "[config]") {
  CHECK_THAT(load_error("run:\n  seed: 1\ndata:\n  batch_size: -4\n"),
             Contains("test.yaml:4: data.batch_size: expected a positive integer, got -4"));
  CHECK_THAT(error_of_string("data:\n  image_size: 8\n"),
             Contains("t.yaml:2: data.image_size: expected an integer from 16 to 4096, got 8"));
  CHECK_THAT(error_of_string("model:\n  dropout: 1\n"),
             Contains("t.yaml:2: model.dropout: expected a probability in [0, 1), got 1"));
  CHECK_THAT(error_of_string("train:\n  lr: [1.0e-3, 1.0e-5]\n"),
             Contains("t.yaml:2: train.lr: expected a positive number or [low, high]"));
  CHECK_THAT(error_of_string("train:\n  lr: [1, 2, 3]\n"), Contains("train.lr: expected"));
  CHECK_THAT(error_of_string("train:\n  lr: 0\n"), Contains("train.lr: expected"));
  CHECK_THAT(error_of_string("train:\n  optimizer:\n    betas: [0.9]\n"),
             Contains("t.yaml:3: train.optimizer.betas: expected two numbers in [0, 1), got a list "
                      "[0.9]"));
  CHECK_THAT(error_of_string("train:\n  one_cycle:\n    moms: [0.9, 0.8]\n"),
             Contains("t.yaml:3: train.one_cycle.moms: expected three momentums"));
  CHECK_THAT(error_of_string("train:\n  one_cycle:\n    pct_start: 1\n"),
             Contains("train.one_cycle.pct_start: expected a number in (0, 1), got 1"));
  CHECK_THAT(error_of_string("train:\n  epochs: 0\n"),
             Contains("train.epochs: expected an integer from 1 to 100000, got 0"));
  CHECK_THAT(error_of_string("train:\n  checkpoint:\n    keep: 0\n"),
             Contains("t.yaml:3: train.checkpoint.keep: expected an integer >= 1, got 0"));
  CHECK_THAT(error_of_string("eval:\n  tta_scale: 0.5\n"),
             Contains("eval.tta_scale: expected a number from 1 to 10, got 0.5"));
  CHECK_THAT(error_of_string("eval:\n  tta_mode: v3\n"),
             Contains("eval.tta_mode: expected one of v1, v2, got v3"));
  CHECK_THAT(error_of_string("eval:\n  tta_n: 0\n"),
             Contains("eval.tta_n: expected an integer in [1, 64], got 0"));
  CHECK_THAT(error_of_string("data:\n  augment:\n    p_affine: 1.5\n"),
             Contains("data.augment.p_affine: expected a probability in [0, 1], got 1.5"));
  CHECK_THAT(error_of_string("train:\n  device: cuda:x\n"),
             Contains("train.device: expected one of auto, cpu, cuda, cuda:N, got cuda:x"));
}

TEST_CASE("enumerations list the allowed values", "[config]") {
  CHECK_THAT(
      load_error("data:\n  layout: foldrs\n"),
      Contains("test.yaml:2: data.layout: expected one of auto, folders, kaggle, csv, pattern, "
               "cifar10, cifar100, shards, got foldrs"));
  const std::string arch_error = error_of_string("model:\n  arch: resnet33\n");
  CHECK_THAT(arch_error, Contains("model.arch: expected one of resnet18, resnet34, resnet50, "
                                  "resnet101, resnet152, resnext50_32x4d, wide_resnet50_2, "
                                  "convnext_tiny, convnext_small, efficientnet_b0"));
  CHECK_THAT(arch_error, Contains("got resnet33"));
  try {
    load_config_from_string("model:\n  arch: convnext_tiy\n", "t.yaml");
    FAIL("an unknown arch was accepted");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.hint(), Contains("did you mean 'convnext_tiny'?"));
  }
  CHECK_THAT(error_of_string("train:\n  precision: fp8\n"),
             Contains("train.precision: expected one of fp32, fp16, bf16, got fp8"));
  CHECK_THAT(error_of_string("train:\n  optimizer: {name: adam}\n"),
             Contains("train.optimizer.name: expected one of adamw, sgd, lamb, rmsprop, got adam"));
}

TEST_CASE("train.device and model.pretrained are parsed once into typed values", "[config]") {
  using Kind = DeviceRequest::Kind;
  const auto device = [](const std::string& text) {
    return load_config_from_string("train:\n  device: '" + text + "'\n", "t.yaml").train.device;
  };
  CHECK(device("auto") == DeviceRequest{});
  CHECK(device("cpu") == DeviceRequest{Kind::kCpu, -1});
  CHECK(device("cuda") == DeviceRequest{Kind::kCuda, -1});
  CHECK(device("cuda:0") == DeviceRequest{Kind::kCuda, 0});
  CHECK(device("cuda:1023") == DeviceRequest{Kind::kCuda, 1023});
  CHECK(device("cuda").any_gpu());
  CHECK(device("auto").any_gpu());
  CHECK_FALSE(device("cuda:0").any_gpu());
  CHECK_FALSE(device("cpu").any_gpu());
  for (const char* bad : {"gpu", "cuda:", "cuda:1024", "cuda:-1", "cuda:1x", "CPU", "",
                          "cuda:99999999999999999999"}) {
    INFO(bad);
    CHECK_THAT(error_of_string(std::string("train:\n  device: '") + bad + "'\n"),
               Contains("t.yaml:2: train.device: expected one of auto, cpu, cuda, cuda:N"));
  }
  try {
    parse_device_request("cpy", "--device");
    FAIL("cpy was accepted");
  } catch (const ChoiceError& e) {
    CHECK_THAT(e.what(), Contains("--device: expected one of auto, cpu, cuda, cuda:N, got 'cpy'"));
    CHECK_THAT(e.hint(), Contains("did you mean 'cpu'?"));
  }

  using Weights = PretrainedWeights::Kind;
  const auto weights = [](const std::string& text) {
    return load_config_from_string("model:\n  pretrained: '" + text + "'\n", "t.yaml")
        .model.pretrained;
  };
  CHECK(weights("imagenet").kind == Weights::kImagenet);
  CHECK(weights("none").kind == Weights::kNone);
  CHECK(weights("/w/resnet34.pth") == PretrainedWeights::file("/w/resnet34.pth"));
  CHECK(weights("./none") == PretrainedWeights::file("./none"));
  CHECK_THAT(error_of_string("model:\n  pretrained: ''\n"),
             Contains("t.yaml:2: model.pretrained: expected imagenet, none or the path of a "
                      "weight file"));
  // Every form is written back as it reads; a file named like a keyword stays a file.
  for (const PretrainedWeights& w :
       {PretrainedWeights{}, PretrainedWeights{Weights::kNone, ""},
        PretrainedWeights::file("w.pth"), PretrainedWeights::file("none"),
        PretrainedWeights::file("imagenet")}) {
    Config c;
    c.model.pretrained = w;
    c.train.device = parse_train_device("cuda:3");
    const Config back = load_config_from_string(to_yaml(c), "written.yaml");
    CHECK(back.model.pretrained.kind == w.kind);
    CHECK(back.train.device == c.train.device);
    if (w.kind == Weights::kFile) {
      CHECK(std::filesystem::path(back.model.pretrained.path).lexically_normal() ==
            std::filesystem::path(w.path).lexically_normal());
    }
  }
}

TEST_CASE("the modern recipe's keys: read, bounded, refused with the key, written back",
          "[config]") {
  const Config c = load_config_from_string(
      "data:\n"
      "  size_schedule: [[0, 64], [2, 128]]\n"
      "  augment:\n"
      "    random_erasing: {p: 0.25, scale: [0.1, 0.2], ratio: [0.5, 2], value: 0.5}\n"
      "    policy: rand_augment\n"
      "    rand_augment: {num_ops: 3, magnitude: 14}\n"
      "train:\n"
      "  mixup: {mixup_alpha: 0.2, cutmix_alpha: 1.0, cutmix_minmax: [0.2, 0.8], prob: 0.5,\n"
      "          switch_prob: 0.3, mode: pair}\n"
      "  ema: {decay: 0.999, warmup: true, validate: false}\n"
      "  early_stopping: {monitor: accuracy, patience: 3, min_delta: 0.01}\n"
      "  best_monitor: valid_loss\n"
      "  plateau_monitor: accuracy\n"
      "  class_weights: [1, 2.5]\n",
      "t.yaml");
  CHECK((c.data.size_schedule == std::vector<SizeStep>{{0, 64}, {2, 128}}));
  CHECK(c.data.augment.random_erasing.p == 0.25);
  CHECK_FALSE(c.data.augment.random_erasing.random_value);
  CHECK(c.data.augment.random_erasing.value == 0.5);
  CHECK(c.data.augment.policy == AugmentPolicy::kRandAugment);
  CHECK(c.data.augment.rand_augment.num_ops == 3);
  CHECK(c.data.augment.rand_augment.magnitude == 14);
  CHECK(c.train.mixup.cutmix_minmax == std::vector<double>{0.2, 0.8});
  CHECK(c.train.mixup.mode == MixupMode::kPair);
  CHECK(c.train.mixup.enabled());
  CHECK(c.train.ema.decay == 0.999);
  CHECK_FALSE(c.train.ema.validate);
  CHECK(c.train.early_stopping.monitor == Monitor::kAccuracy);
  CHECK(c.train.early_stopping.patience == 3);
  CHECK(c.train.best_monitor == Monitor::kValidLoss);
  CHECK(c.train.plateau_monitor == Monitor::kAccuracy);
  CHECK(c.train.class_weights.kind == ClassWeights::Kind::kList);
  CHECK(c.train.class_weights.weights == std::vector<double>{1, 2.5});
  // Written back, read back the same.
  Config again = load_config_from_string(to_yaml(c), "written.yaml");
  again.source = c.source;
  CHECK(again == c);
  const Config defaults = load_config_from_string("", "d.yaml");
  CHECK_FALSE(defaults.train.mixup.enabled());
  CHECK_FALSE(defaults.train.ema.enabled());
  CHECK(defaults.train.class_weights.kind == ClassWeights::Kind::kNone);
  CHECK(defaults.data.augment.random_erasing.random_value);
  CHECK(defaults.data.augment.policy == AugmentPolicy::kNone);
  CHECK(load_config_from_string("data: {augment: {policy: trivial_augment}}\n", "t.yaml")
            .data.augment.policy == AugmentPolicy::kTrivialAugment);
  CHECK(load_config_from_string(to_yaml(defaults), "w.yaml").train == defaults.train);
  CHECK(load_config_from_string("train: {class_weights: balanced}\n", "t.yaml")
            .train.class_weights.kind == ClassWeights::Kind::kBalanced);

  CHECK_THAT(error_of_string("train:\n  mixup: {mixup_alpha: -1}\n"),
             Contains("t.yaml:2: train.mixup.mixup_alpha: expected a number in [0, 1000]"));
  CHECK_THAT(error_of_string("train:\n  mixup: {cutmix_minmax: [0.8, 0.2]}\n"),
             Contains("train.mixup.cutmix_minmax: expected null, or [min, max]"));
  CHECK_THAT(error_of_string("train:\n  mixup: {mode: row}\n"),
             Contains("train.mixup.mode: expected one of batch, pair, elem, got row"));
  CHECK_THAT(error_of_string("train:\n  ema: {decay: 1}\n"),
             Contains("train.ema.decay: expected a number in [0, 1)"));
  CHECK_THAT(error_of_string("train:\n  early_stopping: {monitor: f1}\n"),
             Contains("train.early_stopping.monitor: expected one of valid_loss, accuracy"));
  CHECK_THAT(error_of_string("train:\n  early_stopping: {patience: -1}\n"),
             Contains("train.early_stopping.patience: expected an integer in [0, 100000]"));
  CHECK_THAT(error_of_string("train:\n  class_weights: heavy\n"),
             Contains("train.class_weights: expected none, balanced, or a list of numbers"));
  CHECK_THAT(error_of_string("train:\n  class_weights: [0, 0]\n"),
             Contains("train.class_weights: expected none, balanced, or one number"));
  CHECK_THAT(error_of_string("data:\n  size_schedule: [[2, 64], [1, 128]]\n"),
             Contains("data.size_schedule: expected [epoch, size] pairs with ascending epochs"));
  CHECK_THAT(error_of_string("data:\n  size_schedule: [[0, 8]]\n"),
             Contains("data.size_schedule: expected sizes from 16 to 4096 pixels"));
  const Config framed = load_config_from_string(
      "data:\n  resize_method: pad\n  pad_mode: zeros\n"
      "  augment: {crop: random_resized, scale: [0.35, 1], ratio: [0.5, 2]}\n",
      "t.yaml");
  CHECK(framed.data.resize_method == ResizeMethod::kPad);
  CHECK(framed.data.pad_mode == PadMode::kZeros);
  CHECK(framed.data.augment.crop == TrainCrop::kRandomResized);
  CHECK(framed.data.augment.scale == std::vector<double>{0.35, 1});
  CHECK(framed.data.augment.ratio == std::vector<double>{0.5, 2});
  Config framed_again = load_config_from_string(to_yaml(framed), "written.yaml");
  framed_again.source = framed.source;
  CHECK(framed_again == framed);
  CHECK(defaults.data.resize_method == ResizeMethod::kCrop);
  CHECK(defaults.data.augment.crop == TrainCrop::kResize);
  CHECK_THAT(error_of_string("data:\n  resize_method: stretch\n"),
             Contains("data.resize_method: expected one of crop, squish, pad, got stretch"));
  CHECK_THAT(error_of_string("data:\n  pad_mode: mirror\n"),
             Contains("data.pad_mode: expected one of reflection, zeros, border"));
  CHECK_THAT(error_of_string("data:\n  augment: {scale: [0, 1]}\n"),
             Contains("data.augment.scale: expected [min, max] with 0 < min <= max <= 1"));
  CHECK_THAT(error_of_string("data:\n  augment: {ratio: [2, 0.5]}\n"),
             Contains("data.augment.ratio: expected [min, max] with 0.001 <= min <= max"));
  CHECK_THAT(error_of_string("data:\n  size_schedule: [64, 128]\n"),
             Contains("data.size_schedule: expected a list of [epoch, size] pairs"));
  CHECK_THAT(error_of_string("data:\n  augment: {random_erasing: {value: noise}}\n"),
             Contains("data.augment.random_erasing.value: expected random, or a number"));
  CHECK_THAT(error_of_string("data:\n  augment: {random_erasing: {p: 2}}\n"),
             Contains("data.augment.random_erasing.p: expected a probability in [0, 1]"));
  CHECK_THAT(error_of_string("data:\n  augment: {policy: auto_augment}\n"),
             Contains("data.augment.policy: expected one of none, rand_augment, trivial_augment"));
  CHECK_THAT(error_of_string("data:\n  augment: {rand_augment: {magnitude: 31}}\n"),
             Contains("data.augment.rand_augment.magnitude: expected an integer from 0 to 30"));
  CHECK_THAT(error_of_string("data:\n  augment: {rand_augment: {num_ops: 0}}\n"),
             Contains("data.augment.rand_augment.num_ops: expected an integer from 1 to 16"));
  // augment: none turns random erasing off too, and is still written back as none.
  const Config none = load_config_from_string("data: {augment: none}\n", "t.yaml");
  CHECK(none.data.augment.random_erasing.p == 0.0);
  CHECK(none.data.augment.policy == AugmentPolicy::kNone);
  CHECK_THAT(to_yaml(none), Contains("  augment: none\n"));
}

TEST_CASE("a key written twice is an error at its second line, in the file or a --set",
          "[config]") {
  CHECK_THAT(load_error("data:\n  batch_size: 8\n  image_size: 64\n  batch_size: 64\n"),
             Contains("test.yaml:4: data.batch_size: duplicate key"));
  CHECK_THAT(error_of_string("run:\n  seed: 1\nrun:\n  seed: 2\n"),
             Contains("t.yaml:3: run: duplicate key"));
  CHECK_THAT(error_of_string("", {parse_override("data={batch_size: 8, batch_size: 4}")}),
             Contains("data.batch_size: duplicate key (from --set data="));
}

// Each enumeration: every name parses to a value whose name it is; an unknown name is a
// ChoiceError (a ConfigError, exit 2) naming the key, every choice and the closest one.
template <typename Enum>
void check_names(Enum (*parse)(std::string_view), const std::string& (*name)(Enum),
                 const std::vector<std::string>& names, const std::string& key) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    INFO(names[i]);
    CHECK(parse(names[i]) == static_cast<Enum>(i));
    CHECK(name(static_cast<Enum>(i)) == names[i]);
  }
  try {
    parse(names[0] + "x");
    FAIL("an unknown name was accepted");
  } catch (const ChoiceError& e) {
    CHECK(e.exit_code() == ExitCode::kUsage);
    CHECK(std::string(e.what()) ==
          key + ": expected one of " + join(names) + ", got '" + names[0] + "x'");
    CHECK(e.expected() == "one of " + join(names));
    CHECK(e.hint() == "did you mean '" + names[0] + "'?");
  }
}

TEST_CASE("each enumeration has one parse and one name, in the order messages list them",
          "[config]") {
  check_names(parse_precision, precision_name, {"fp32", "fp16", "bf16"}, "train.precision");
  check_names(parse_recipe, recipe_name, {"fine_tune", "one_cycle"}, "train.recipe");
  check_names(parse_data_layout, data_layout_name,
              {"auto", "folders", "kaggle", "csv", "pattern", "cifar10", "cifar100", "shards"},
              "data.layout");
  check_names(parse_data_cache, data_cache_name, {"none", "ram", "device"}, "data.cache");
  check_names(parse_cifar_label, cifar_label_name, {"fine", "coarse"}, "data.cifar_label");
  check_names(parse_task, task_name, {"auto", "single_label", "multi_label"}, "model.task");
  check_names(parse_monitor, monitor_name,
              {"valid_loss", "accuracy", "f1_samples", "f1_macro", "map"}, "monitor");
  check_names(parse_head_kind, head_kind_name, {"fastai", "linear"}, "model.head");
  check_names(parse_optimizer_kind, optimizer_kind_name, {"adamw", "sgd", "lamb", "rmsprop"},
              "train.optimizer.name");
  check_names(parse_tta_mode, tta_mode_name, {"v1", "v2"}, "eval.tta_mode");
  // What to_yaml writes for each is its name, so config.yaml reads back the same.
  Config c;
  c.train.precision = Precision::kBf16;
  c.eval.tta_mode = TtaMode::kV2;
  const std::string text = to_yaml(c);
  CHECK_THAT(text, Contains("  precision: bf16\n") && Contains("  tta_mode: v2\n") &&
                       Contains("  recipe: fine_tune\n") && Contains("  layout: auto\n") &&
                       Contains("  head: fastai\n") && Contains("    name: adamw\n"));
}

TEST_CASE("duplicate keys are found in linear time in a document of aliases to aliases",
          "[config]") {
  // a29 names 10^29 paths to a0 through its aliases; a walk that followed every alias would never
  // reach the repeated `run` after them. Checked in a child that gets 10 s.
  std::string yaml = "a0: &a0 {x: 1}\n";
  for (int i = 1; i < 30; ++i) {
    yaml += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) yaml += (k ? ", *a" : "*a") + std::to_string(i - 1);
    yaml += "]\n";
  }
  yaml += "run: {seed: 1}\nrun: {seed: 2}\n";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::alarm(10);
    try {
      load_config_from_string(yaml, "t.yaml");
    } catch (const ConfigError& e) {
      ::_exit(std::string(e.what()).find("t.yaml:32: run: duplicate key") != std::string::npos ? 0
                                                                                               : 1);
    }
    ::_exit(2);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));  // not killed by the alarm
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("a missing config file is an error naming it", "[config]") {
  testing::TempDir dir;
  const std::string path = (dir.path() / "nope.yaml").string();
  CHECK_THAT(config_error_of([&] { load_config(path); }),
             Contains("config file '" + path + "' does not exist"));
}

TEST_CASE("YAML syntax errors give file, line and column", "[config]") {
  const std::string message = load_error("data:\n  batch_size: 16\n  image_size: [64\n");
  CHECK_THAT(message, Contains("test.yaml:"));
  CHECK_THAT(message, Contains("invalid YAML"));
  const std::string tabs = error_of_string("run:\n  seed: 1\n bad: [\n");
  CHECK_THAT(tabs, Contains("t.yaml:3:"));
}

TEST_CASE("overrides (--set) replace values, create maps and are validated", "[config]") {
  const std::string yaml = "data:\n  batch_size: 16\n";
  const Config config = load_config_from_string(
      yaml, "t.yaml",
      {parse_override("data.batch_size=64"), parse_override("train.lr=[1e-5,1e-3]"),
       parse_override("model.pretrained=none"), parse_override("train.optimizer.eps=1e-6"),
       parse_override("train.time_limit=5h50m"), parse_override("data.workers=auto")});
  CHECK(config.data.batch_size == 64);
  CHECK(config.train.lr == std::vector<double>{1e-5, 1e-3});
  CHECK(config.model.pretrained.kind == ltfit::PretrainedWeights::Kind::kNone);
  CHECK(config.train.optimizer.eps == 1e-6);
  CHECK(config.train.optimizer.name == OptimizerKind::kAdamW);  // siblings keep their defaults
  CHECK(config.train.time_limit_seconds == 5 * 3600 + 50 * 60);
  CHECK(config.data.workers == 0);

  SECTION("a later override wins") {
    const Config twice = load_config_from_string(
        yaml, "t.yaml", {parse_override("data.batch_size=8"), parse_override("data.batch_size=4")});
    CHECK(twice.data.batch_size == 4);
  }
  SECTION("bad values name the --set, not a line") {
    const std::string message = error_of_string(yaml, {parse_override("data.batch_size=-4")});
    CHECK_THAT(message, Contains("t.yaml: data.batch_size: expected a positive integer, got -4 "
                                 "(from --set data.batch_size=-4)"));
  }
  SECTION("unknown keys suggest the right one") {
    const std::string message = error_of_string(yaml, {parse_override("data.batchsize=4")});
    CHECK_THAT(message, Contains("data.batchsize: unknown key; did you mean 'batch_size'?"));
    CHECK_THAT(message, Contains("(from --set data.batchsize=4)"));
  }
  SECTION("a key below a scalar is an error") {
    CHECK_THAT(error_of_string(yaml, {parse_override("data.batch_size.x=1")}),
               Contains("data.batch_size: is 16, not a map"));
  }
  SECTION("a value that is not YAML is an error") {
    CHECK_THAT(error_of_string(yaml, {parse_override("train.lr=[1e-5,")}),
               Contains("--set train.lr=[1e-5,: invalid YAML"));
  }
}

TEST_CASE("parse_override splits key=value and rejects the rest", "[config]") {
  const Override o = parse_override("train.lr=[1e-5, 1e-3]");
  CHECK(o.key == "train.lr");
  CHECK(o.value == "[1e-5, 1e-3]");
  CHECK(parse_override("run.name=a=b").value == "a=b");
  CHECK_THAT(config_error_of([] { parse_override("xyz"); }),
             Contains("--set expects key=value, got 'xyz'"));
  CHECK_THAT(config_error_of([] { parse_override("=3"); }),
             Contains("--set expects key=value, got '=3'"));
  CHECK_THAT(error_of_string("", {parse_override("data..x=3")}), Contains("dotted key"));
}

TEST_CASE("parse_duration reads h/m/s strings and plain seconds", "[config]") {
  CHECK(parse_duration("5h50m", "k") == 21000.0);
  CHECK(parse_duration("90m", "k") == 5400.0);
  CHECK(parse_duration("45s", "k") == 45.0);
  CHECK(parse_duration("1h", "k") == 3600.0);
  CHECK(parse_duration("3600", "k") == 3600.0);
  CHECK(parse_duration("1.5h", "k") == 5400.0);
  CHECK_THAT(config_error_of([] { parse_duration("50m5h", "train.time_limit"); }),
             Contains("train.time_limit: expected a duration"));
  CHECK_THAT(config_error_of([] { parse_duration("h", "k"); }), Contains("got 'h'"));
  CHECK_THAT(config_error_of([] { parse_duration("", "k"); }), Contains("k: expected"));
}

TEST_CASE("validate checks a config built in code", "[config]") {
  Config config;
  CHECK_NOTHROW(validate(config));
  config.source = "built";
  config.eval.tta_beta = 2;
  CHECK_THAT(config_error_of([&] { validate(config); }),
             Contains("built: eval.tta_beta: expected a number in [0, 1], got 2"));
}

TEST_CASE("to_yaml writes every field and reads back to the same config", "[config]") {
  SECTION("defaults") {
    const Config config = load_config_from_string("", "t.yaml");
    CHECK(load_config_from_string(to_yaml(config), "t.yaml") == config);
  }
  SECTION("every field changed") {
    Config c;
    c.source = "t.yaml";
    c.run = {"my run: 2", "out dir", 7, true};
    c.data.root = "/data/x";
    c.data.layout = DataLayout::kKaggle;
    c.data.valid_count = 100;
    c.data.image_size = 96;
    c.data.batch_size = 3;
    c.data.workers = 5;
    c.data.augment = {false, 5.5, 1.3, 0.1, 0.05, 0.5, 0.25};
    c.data.csv = {"lab els.csv", "2", "tags", "is valid", " ", "imgs/jpg", ".jpeg"};
    c.data.label_pattern = R"(^([a-z]+)-\d+\.png$)";
    c.data.valid_pct = 0.125;
    c.data.train_folder = "training";
    c.data.valid_folder = "val";
    c.model = {"resnet50", PretrainedWeights::file("null"), HeadKind::kLinear, 0.125};
    c.train.recipe = Recipe::kOneCycle;
    c.train.epochs = 9;
    c.train.freeze_epochs = 0;
    c.train.lr = {1.0e-5, 3.0e-3};
    c.train.optimizer = {OptimizerKind::kSgd, {0.8, 0.95}, 1e-7, 0.1};
    c.train.one_cycle = {0.25, 10, 1e4, {0.9, 0.8, 0.9}};
    c.train.schedule = ScheduleKind::kPlateau;
    c.train.flat_cos = {0.5, 1e3};
    c.train.warmup_epochs = 1.5;
    c.train.warmup_lr = 2e-6;
    c.train.min_lr = 1e-7;
    c.train.decay_milestones = {3, 7.5};
    c.train.decay_rate = 0.25;
    c.train.patience_epochs = 4;
    c.train.cooldown_epochs = 2;
    c.train.label_smoothing = 0.1;
    c.train.precision = Precision::kBf16;
    c.train.channels_last = false;
    c.train.device = ltfit::parse_train_device("cuda:1");
    c.train.checkpoint = {2.5, 3};
    c.train.time_limit_seconds = 5 * 3600 + 50 * 60 + 7;
    c.eval = {false, TtaMode::kV2, 0.3, 1.2, 6, 0.35, {0.2, 0.7}};
    c.model.task = ltfit::Task::kMultiLabel;
    c.train.pos_weight = {ltfit::ClassWeights::Kind::kList, {2.5, 0.5}};
    c.train.profile = true;
    c.data.max_pixels = 0;
    c.data.formats = {"png", "hdr", "jpeg2000"};
    const std::string text = to_yaml(c);
    CHECK_THAT(text, Contains("  max_pixels: ~\n"));
    CHECK_THAT(text, Contains("time_limit: 5h50m7s"));
    CHECK_THAT(text, Contains("  batch_size: 3\n"));
    CHECK(load_config_from_string(text, "t.yaml") == c);
    c.train.time_limit_seconds = 12.25;
    CHECK(load_config_from_string(to_yaml(c), "t.yaml") == c);
    c.data.max_pixels = 123'456'789'012;
    CHECK(load_config_from_string(to_yaml(c), "t.yaml") == c);
  }
  SECTION("strings a plain scalar would change: edge blanks, carriage returns, control bytes") {
    // Found by fuzz_config: `root: data/synth      <CR>   # comment` loads as "data/synth      \r",
    // which yaml-cpp wrote unquoted and read back as "data/synth".
    const Config found =
        load_config_from_string("data:\n  root: data/synth      \r   # a comment\n", "t.yaml");
    CHECK(load_config_from_string(to_yaml(found), "t.yaml") == found);
    for (const std::string& text :
         {std::string("data/synth      \r"), std::string(" lead"), std::string("trail\t"),
          std::string("a\x01b"), std::string("tab\tinside"), std::string("del\x7f")}) {
      INFO(text);
      Config c;
      c.data.root = text;
      c.run.out_dir = text;
      c.train.device = ltfit::parse_train_device("cpu");
      const Config again = load_config_from_string(to_yaml(c), "t.yaml");
      CHECK(again.data.root == text);
      CHECK(again.run.out_dir == text);
    }
  }
}

TEST_CASE("every unknown key and invalid value of one load is reported, then exit 2 once",
          "[config]") {
  // Before, only the first (data.batchsize) was reported: fixing it revealed the next, and so on.
  const std::string yaml =
      "data:\n"
      "  batchsize: 8\n"   // 2: unknown, close to batch_size
      "  image_size: 8\n"  // 3: out of range
      "model:\n"
      "  arch: resnet33\n"  // 5: not an arch, close to resnet34
      "trian:\n"            // 6: unknown, close to train
      "  epochs: 2\n"
      "train:\n"
      "  lr: fast\n"                                   // 9: wrong type
      "  optimizer: {bettas: [0.9, 0.9], eps: -1}\n";  // 10: unknown and out of range
  try {
    load_config_from_string(yaml, "t.yaml");
    FAIL("a config with 7 problems loaded");
  } catch (const ConfigError& e) {
    CHECK(e.exit_code() == ExitCode::kUsage);
    const std::string message = e.what();
    CHECK_THAT(message, Contains("7 problems in t.yaml:"));
    CHECK_THAT(message, Contains("t.yaml:2: data.batchsize: unknown key; did you mean "
                                 "'batch_size'?"));
    CHECK_THAT(message, Contains("t.yaml:6: trian: unknown key; did you mean 'train'?"));
    CHECK_THAT(message, Contains("t.yaml:9: train.lr: expected a number or a list [low, high], "
                                 "got fast"));
    CHECK_THAT(message, Contains("t.yaml:10: train.optimizer.bettas: unknown key; did you mean "
                                 "'betas'?"));
    CHECK_THAT(message, Contains("t.yaml:3: data.image_size: expected an integer from 16 to 4096, "
                                 "got 8"));
    CHECK_THAT(message, Contains("t.yaml:5: model.arch: expected one of resnet18") &&
                            Contains("(did you mean 'resnet34'?)"));
    CHECK_THAT(message, Contains("t.yaml:10: train.optimizer.eps: expected a positive number <= 1, "
                                 "or null, got -1"));
    CHECK_THAT(e.hint(), Contains("every unknown key and invalid value is listed"));
  }
  // One key breaking two rules is one problem (its first rule), as before.
  CHECK(error_of_string("data:\n  batch_size: -4\n") ==
        "t.yaml:2: data.batch_size: expected a positive integer, got -4");
}

TEST_CASE("contradictions are refused and ignored keys warned about at load time", "[config]") {
  // data.valid_count 0 is its default now (the split drawn by data.valid_pct); a negative count
  // is refused.
  CHECK(load_config_from_string("data:\n  valid_count: 0\n", "t.yaml").data.valid_count == 0);
  CHECK_THAT(error_of_string("data:\n  valid_count: -1\n"),
             Contains("t.yaml:2: data.valid_count: expected an integer >= 0"));
  // fine_tune unfreezes the body: train.frozen cannot hold there (fine_tune is the default).
  CHECK_THAT(error_of_string("train:\n  recipe: fine_tune\n  frozen: true\n"),
             Contains("t.yaml:3: train.frozen: expected false under train.recipe fine_tune"));
  CHECK_THAT(error_of_string("train: {frozen: true}\n"), Contains("train.frozen: expected false"));
  CHECK(load_config_from_string("train: {recipe: one_cycle, frozen: true}", "t.yaml").train.frozen);
  // Keys that are merely ignored load, and config_warnings names them and why.
  CHECK(config_warnings(load_config_from_string("", "t.yaml")).empty());
  const Config one_cycle =
      load_config_from_string("train: {recipe: one_cycle, freeze_epochs: 3}", "t.yaml");
  REQUIRE(config_warnings(one_cycle).size() == 1);
  CHECK(config_warnings(one_cycle)[0] ==
        "t.yaml: train.freeze_epochs is 3 but is ignored: train.recipe is one_cycle (frozen "
        "epochs are fine_tune's)");
  CHECK(config_warnings(load_config_from_string("train: {recipe: one_cycle, freeze_epochs: 1}",
                                                "t.yaml"))
            .empty());  // the default: nothing to warn about
  const Config tta = load_config_from_string("eval: {tta_mode: v1, tta_n: 8}", "t.yaml");
  REQUIRE(config_warnings(tta).size() == 1);
  CHECK_THAT(config_warnings(tta)[0], Contains("eval.tta_n is 8 but is ignored: eval.tta_mode "
                                               "is v1"));
  const Config v2 = load_config_from_string("eval: {tta_mode: v2, tta_scale: 1.2}", "t.yaml");
  REQUIRE(config_warnings(v2).size() == 1);
  CHECK_THAT(config_warnings(v2)[0], Contains("eval.tta_scale is 1.2 but is ignored"));
  // Before, milestones under another schedule were dropped without a word.
  const Config flat =
      load_config_from_string("train: {schedule: flat_cos, decay_milestones: [2, 4]}", "t.yaml");
  REQUIRE(config_warnings(flat).size() == 1);
  CHECK_THAT(config_warnings(flat)[0],
             Contains("train.decay_milestones is [2, 4] but is ignored: train.schedule is not "
                      "multistep"));
  CHECK(config_warnings(load_config_from_string(
                            "train: {schedule: multistep, decay_milestones: [2, 4]}", "t.yaml"))
            .empty());
  // A count only the kaggle layout holds out; auto may resolve to kaggle, so it is kept there.
  REQUIRE(config_warnings(
              load_config_from_string("data: {layout: folders, valid_count: 100}", "t.yaml"))
              .size() == 1);
  CHECK(config_warnings(load_config_from_string("data: {valid_count: 100}", "t.yaml")).empty());
  const auto configs = testing::source_dir() / "configs";
  CHECK(config_warnings(load_config((configs / "cats_dogs.yaml").string())).empty());
}

TEST_CASE("the shipped configs load cleanly", "[config]") {
  const auto configs = testing::source_dir() / "configs";
  const Config study = load_config((configs / "cats_dogs.yaml").string());
  CHECK(study.model.arch == "resnet34");
  CHECK(study.model.pretrained.kind == ltfit::PretrainedWeights::Kind::kImagenet);
  CHECK(study.data.batch_size == 16);
  CHECK(study.data.image_size == 224);
  CHECK(study.train.recipe == Recipe::kFineTune);
  CHECK(study.train.epochs == 3);
  const Config quick = load_config((configs / "quickstart.yaml").string());
  CHECK(quick.run.name == "quickstart");
  CHECK(quick.data.root == "data/synth");
  CHECK(quick.model.pretrained.kind == ltfit::PretrainedWeights::Kind::kNone);
  CHECK(quick.train.recipe == Recipe::kOneCycle);
  CHECK_FALSE(quick.eval.tta);
  // The modern config is the study's, plus the EMA that measured best (README "The modern recipe").
  const Config modern = load_config((configs / "cats_dogs_modern.yaml").string());
  CHECK(config_warnings(modern).empty());
  CHECK(modern.run.name == "cats_dogs_modern");
  CHECK(modern.train.ema.decay == 0.99);
  CHECK(modern.train.ema.warmup);
  CHECK(modern.train.ema.validate);
  CHECK(modern.model.arch == study.model.arch);
  CHECK(modern.data.batch_size == study.data.batch_size);
  CHECK(modern.train.epochs == study.train.epochs);
  CHECK(modern.train.recipe == study.train.recipe);
}

}  // namespace
}  // namespace ltfit

TEST_CASE("TTA's blend weight follows the mode unless it is set", "[config]") {
  using ltfit::Config;
  using ltfit::load_config_from_string;
  using ltfit::parse_override;
  CHECK(load_config_from_string("eval:\n  tta: true\n", "t.yaml").eval.tta_beta == 0.4);
  CHECK(load_config_from_string("eval:\n  tta_mode: v2\n", "t.yaml").eval.tta_beta == 0.25);
  CHECK(
      load_config_from_string("eval:\n  tta_mode: v2\n  tta_beta: 0.5\n", "t.yaml").eval.tta_beta ==
      0.5);
  const Config config = load_config_from_string("eval:\n  tta: true\n", "t.yaml",
                                                {parse_override("eval.tta_mode=v2")});
  CHECK(config.eval.tta_mode == ltfit::TtaMode::kV2);
  CHECK(config.eval.tta_beta == 0.25);
  CHECK_FALSE(config.train.profile);
}

TEST_CASE("strings that are not UTF-8 are kept, unless config.yaml could not keep them",
          "[config]") {
  // Found by the config fuzz target: yaml-cpp reads any bytes, but its emitter writes U+FFFD for
  // bytes that are not UTF-8 in a value it has to quote, so the run directory's config.yaml
  // (what --resume reads) named another data.root.
  const std::string message = ltfit::error_of_string("data:\n  root: \"data/caf\xe9: x\"\n");
  CHECK_THAT(message, Catch::Matchers::Contains("data.root"));
  CHECK_THAT(message, Catch::Matchers::Contains("not UTF-8"));
  // Found by the fuzz target too: a control character makes config.yaml double-quote the value,
  // which the round-trip check has to write the same way (emit_string) to see the U+FFFD.
  // The fuzz input's own value: a plain scalar with a carriage return and 23 bytes 0x84.
  const std::string quoted = ltfit::error_of_string("model:\n  pretrained: none     \r" +
                                                    std::string(23, '\x84') + "  interface\n");
  CHECK_THAT(quoted, Catch::Matchers::Contains("model.pretrained"));
  CHECK_THAT(quoted, Catch::Matchers::Contains("not UTF-8"));
  for (const std::string root : {"data/caf\xe9", "data/caf\xc3\xa9", "d\\og\xff"}) {
    const ltfit::Config config =
        ltfit::load_config_from_string("data:\n  root: " + root + "\n", "t.yaml");
    CHECK(config.data.root == root);
    CHECK(ltfit::load_config_from_string(ltfit::to_yaml(config), "w.yaml").data.root == root);
  }
}

TEST_CASE("train.accumulate and train.clip_grad_norm: defaults, bounds, written back", "[config]") {
  const ltfit::Config defaults = ltfit::load_config_from_string("", "t.yaml");
  CHECK(defaults.train.accumulate == 1);
  CHECK(defaults.train.clip_grad_norm == 0.0);
  const ltfit::Config set =
      ltfit::load_config_from_string("train: {accumulate: 4, clip_grad_norm: 1.5}", "t.yaml");
  CHECK(set.train.accumulate == 4);
  CHECK(set.train.clip_grad_norm == 1.5);
  ltfit::Config again = ltfit::load_config_from_string(ltfit::to_yaml(set), "w.yaml");
  again.source = set.source;
  CHECK(again == set);
  CHECK_THAT(ltfit::error_of_string("train: {accumulate: 0}"),
             Catch::Matchers::Contains("train.accumulate"));
  CHECK_THAT(ltfit::error_of_string("train: {clip_grad_norm: -1}"),
             Catch::Matchers::Contains("train.clip_grad_norm"));
}

TEST_CASE("eval.top_k: auto or k >= 1, written back, refused under multi_label", "[config]") {
  using Catch::Matchers::Contains;
  const ltfit::Config defaults = ltfit::load_config_from_string("", "t.yaml");
  CHECK(defaults.eval.top_k == 0);  // auto
  CHECK_THAT(ltfit::to_yaml(defaults), Contains("  top_k: auto\n"));
  const ltfit::Config three = ltfit::load_config_from_string("eval: {top_k: 3}", "t.yaml");
  CHECK(three.eval.top_k == 3);
  ltfit::Config again = ltfit::load_config_from_string(ltfit::to_yaml(three), "w.yaml");
  again.source = three.source;
  CHECK(again == three);
  CHECK(ltfit::load_config_from_string("eval: {top_k: auto}", "t.yaml").eval.top_k == 0);
  for (const char* bad : {"0", "-5", "2.5", "five"}) {
    CHECK_THAT(ltfit::error_of_string(std::string("eval: {top_k: ") + bad + "}"),
               Contains("eval.top_k: expected auto or an integer >= 1, got"));
  }
  CHECK_THAT(ltfit::error_of_string("model: {task: multi_label}\neval: {top_k: 5}\n"),
             Contains("eval.top_k: expected its default under model.task multi_label, got 5"));
}

TEST_CASE("train.optimizer: lamb and rmsprop, eps per optimizer, alpha and max_grad_norm",
          "[config]") {
  using Catch::Matchers::Contains;
  const ltfit::Config defaults = ltfit::load_config_from_string("", "t.yaml");
  const ltfit::OptimizerConfig& d = defaults.train.optimizer;
  CHECK_FALSE(d.eps.has_value());
  CHECK(d.resolved_eps() == 1e-5);  // fastai's Adam
  CHECK(d.alpha == 0.9);
  CHECK(d.max_grad_norm == 1.0);
  CHECK_THAT(ltfit::to_yaml(defaults), Contains("    eps: ~\n") && Contains("    alpha: 0.9\n") &&
                                           Contains("    max_grad_norm: 1\n"));
  const ltfit::Config lamb = ltfit::load_config_from_string(
      "train: {optimizer: {name: lamb, max_grad_norm: null}}", "t.yaml");
  CHECK(lamb.train.optimizer.name == ltfit::OptimizerKind::kLamb);
  CHECK_FALSE(lamb.train.optimizer.max_grad_norm.has_value());
  CHECK(lamb.train.optimizer.resolved_eps() == 1e-6);  // timm's Lamb
  const ltfit::Config rmsprop =
      ltfit::load_config_from_string("train: {optimizer: {name: rmsprop, alpha: 0.95}}", "t.yaml");
  CHECK(rmsprop.train.optimizer.resolved_eps() == 1e-10);  // timm's RMSpropTF
  CHECK(rmsprop.train.optimizer.alpha == 0.95);
  const ltfit::Config recipe = ltfit::load_config_from_string(
      "train: {optimizer: {name: rmsprop, eps: 1.0e-3, max_grad_norm: 2.5}}", "t.yaml");
  CHECK(recipe.train.optimizer.resolved_eps() == 1e-3);  // timm's EfficientNet recipe
  CHECK(recipe.train.optimizer.max_grad_norm == 2.5);
  for (const ltfit::Config* c : {&lamb, &rmsprop, &recipe}) {  // null and numbers read back
    ltfit::Config again = ltfit::load_config_from_string(ltfit::to_yaml(*c), "w.yaml");
    again.source = c->source;
    CHECK(again == *c);
  }
  CHECK_THAT(ltfit::error_of_string("train: {optimizer: {alpha: 1}}"),
             Contains("train.optimizer.alpha: expected a number in [0, 1), got 1"));
  CHECK_THAT(ltfit::error_of_string("train: {optimizer: {max_grad_norm: 0}}"),
             Contains("train.optimizer.max_grad_norm: expected a positive number, or null, got 0"));
  CHECK_THAT(ltfit::error_of_string("train: {optimizer: {eps: small}}"),
             Contains("train.optimizer.eps") && Contains("a number or null"));
  // Each is ignored by the optimizers that lack it, and said so.
  const auto warned = [](const std::string& yaml) {
    return ltfit::config_warnings(ltfit::load_config_from_string(yaml, "t.yaml"));
  };
  CHECK(warned("train: {optimizer: {name: lamb, eps: 1.0e-8}}").empty());
  const auto sgd = warned("train: {optimizer: {name: sgd, eps: 1.0e-8, max_grad_norm: null}}");
  REQUIRE(sgd.size() == 2);
  CHECK_THAT(sgd[0], Contains("train.optimizer.eps is 1e-08 but is ignored"));
  CHECK_THAT(sgd[1], Contains("train.optimizer.max_grad_norm is null but is ignored"));
  const auto adamw = warned("train: {optimizer: {alpha: 0.5}}");
  REQUIRE(adamw.size() == 1);
  CHECK_THAT(adamw[0], Contains("train.optimizer.alpha is 0.5 but is ignored: "
                                "train.optimizer.name is not rmsprop"));
}

namespace ltfit {

TEST_CASE("data.augment: none turns every augmentation off and is written back as none",
          "[config]") {
  const Config off = load_config_from_string("data:\n  augment: none\n", "t.yaml");
  const AugmentConfig none = {/*flip=*/false,       /*max_rotate=*/0.0,   /*max_zoom=*/1.0,
                              /*max_lighting=*/0.0, /*max_warp=*/0.0,     /*p_affine=*/0.0,
                              /*p_lighting=*/0.0,   /*random_crop=*/false};
  CHECK(off.data.augment == none);
  const std::string yaml = to_yaml(off);
  CHECK_THAT(yaml, Contains("augment: none"));
  CHECK(load_config_from_string(yaml, "written").data.augment == none);
  // The same from the command line, and a default config keeps its mapping.
  CHECK(load_config_from_string("", "t.yaml", {parse_override("data.augment=none")}).data.augment ==
        none);
  CHECK_THAT(to_yaml(load_config_from_string("", "t.yaml")), Contains("max_rotate: 10"));
  CHECK(load_config_from_string("", "t.yaml").data.augment.random_crop);
  // random_crop alone: still a mapping (other keys at their defaults), written back as false.
  const Config centred =
      load_config_from_string("data:\n  augment:\n    random_crop: false\n", "t.yaml");
  CHECK_FALSE(centred.data.augment.random_crop);
  CHECK(centred.data.augment.max_rotate == 10);
  CHECK_THAT(to_yaml(centred), Contains("random_crop: false"));
  CHECK_FALSE(load_config_from_string(to_yaml(centred), "w").data.augment.random_crop);
  CHECK_THAT(error_of_string("data:\n  augment: off\n"),
             Contains("data.augment: expected none, or a map"));
}

}  // namespace ltfit

namespace ltfit {

TEST_CASE("train.schedule and its settings: parsed, bounded, and refused with the key",
          "[config]") {
  const Config c = load_config_from_string(
      "train:\n  schedule: cosine\n  warmup_epochs: 2\n  min_lr: 1.0e-6\n  label_smoothing: 0.1\n",
      "t.yaml");
  CHECK(c.train.schedule == ScheduleKind::kCosine);
  CHECK(c.train.warmup_epochs == 2.0);
  CHECK(c.train.min_lr == 1e-6);
  CHECK(c.train.label_smoothing == 0.1);
  CHECK(load_config_from_string("", "t.yaml").train.schedule == ScheduleKind::kOneCycle);
  CHECK_THAT(
      config_error_of([] { load_config_from_string("train: {schedule: cosin}\n", "t.yaml"); }),
      Contains("train.schedule") && Contains("cosine"));
  CHECK_THAT(config_error_of(
                 [] { load_config_from_string("train: {decay_milestones: [5, 2]}\n", "t.yaml"); }),
             Contains("train.decay_milestones: expected ascending epochs"));
  CHECK_THAT(
      config_error_of([] { load_config_from_string("train: {label_smoothing: 1}\n", "t.yaml"); }),
      Contains("train.label_smoothing: expected a number in [0, 1)"));
  CHECK_THAT(config_error_of([] { load_config_from_string("train: {decay_rate: 0}\n", "t.yaml"); }),
             Contains("train.decay_rate"));
}

}  // namespace ltfit
