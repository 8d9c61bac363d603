// Loading and overriding the YAML configuration (config_loader.h).
//
// Pipeline: text -> YAML tree -> `--set` overrides spliced into the tree -> structs (the
// convert_* functions below, with the data and train sections' in config_data_keys.cpp and
// config_train_keys.cpp: the only code that walks the document; enumerations are parsed
// here by config.h's parse_*) -> range rules (config_rules.cpp, written once against the
// structs). Reading one value, checking its
// type and naming the file and line (or the `--set`) of a bad one is config_yaml.cpp's and the
// shared yaml_reader.h's job (duplicate keys are refused when the document is loaded).
// Writing (to_yaml) is in config_writer.cpp; only these src/config files include yaml-cpp.
// Thread-safe: no shared state.
#include "ltfit/config/config_loader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <utility>

#include "config/config_internal.h"
#include "config/config_sections.h"
#include "config/config_yaml.h"
#include "ltfit/util/error.h"
#include "ltfit/util/input_file.h"

namespace ltfit {
namespace {

using namespace config_internal;

// ---- tree -> structs: the one place that reads the tree --------------------------------------
// Each map's keys are named once, in read_fields' list: what is read is what is accepted. Each
// field also says what it means: these lists are the one description of the config keys, from
// which the reference (config_reference.h, docs/config.md) is generated.

void convert_run(const Walk& walk, const Located& at, RunConfig& run) {
  read_fields(
      walk, at,
      {field("name", run.name,
             "name of the run directory under `run.out_dir`; when a config file does not set "
             "it, the file's name without `.yaml` (a new run never overwrites an earlier one: "
             "it gets `<name>-2`, `<name>-3`, ...)"),
       field("out_dir", read_path, write_path, run.out_dir, kPathExpected,
             "parent folder of the run directories"),
       field("seed", run.seed,
             "seeds every random choice: validation split, shuffle, head init, "
             "augmentation, dropout"),
       field("deterministic", run.deterministic,
             "use deterministic algorithms only (slower on GPU; cuDNN benchmark off)"),
       field("tensorboard", run.tensorboard,
             "write TensorBoard events under `<run dir>/tb/` (`tensorboard --logdir runs`)")});
}

void convert_model(const Walk& walk, const Located& at, ModelConfig& model) {
  read_fields(
      walk, at,
      {field("arch", model.arch,
             "the backbone, one of `ltfit models` (torchvision's architecture and weights)"),
       field("pretrained", parse_pretrained, pretrained_name, model.pretrained,
             "imagenet (torchvision's weights, from the torch hub cache or downloaded), "
             "timm/<name> (timm's weights on the Hugging Face hub, e.g. timm/resnet50.a1_in1k: "
             "its cache, else downloaded), the path of a weight file (a torch.save `.pth` or a "
             "`.safetensors` of the same arch), or none (random init)"),
       field("head", parse_head_kind, head_kind_name, model.head,
             "the classifier on the body; fastai: concat pool, BN, dropout, linear 512, ReLU, BN, "
             "dropout, linear; linear: torchvision's average pool and fc"),
       field("dropout", model.dropout, "fastai head: the last dropout p (the first is half)",
             closed_open(0, 1, "a probability in [0, 1)")),
       field("task", parse_task, task_name, model.task,
             "single_label: one class per image (softmax, cross-entropy); multi_label: a set of "
             "labels per image (a sigmoid per class, binary cross-entropy, fastai's "
             "`MultiCategoryBlock`); auto: multi_label when `data.csv.label_delim` is set"),
       field("stem", parse_stem, stem_name, model.stem,
             "a ResNet's first layers: imagenet (torchvision's 7×7 stride-2 conv and 3×3 "
             "max-pool: a 224 px image reaches layer1 at 56 px) or cifar (the adaptation most "
             "PyTorch CIFAR code uses: a 3×3 stride-1 conv and no max-pool, so a 32 px image "
             "reaches layer1 at 32 px, 16 times the compute); ResNet family only; with "
             "`pretrained`, the 3×3 conv starts from random and the rest from the weights"),
       field("drop_path", read_optional_number, write_optional_number, model.drop_path,
             "number or null",
             "stochastic depth (timm's `drop_path_rate`): in training, each residual branch of the "
             "deepest block is dropped per image with this probability, the shallower blocks' "
             "probabilities rising linearly to it, as the arch's torchvision and timm code "
             "schedule it; off in evaluation; null: the arch's own (ConvNeXt-Tiny 0.1, -Small "
             "0.4, EfficientNet 0.2, Swin-T 0.2, ViT 0); archs without stochastic depth (ResNet, "
             "RegNet, MobileNetV3) refuse a non-zero value",
             Bounds{0, 1, /*low_open=*/false, /*high_open=*/true,
                    "a probability in [0, 1), or null"})});
}

void convert_eval(const Walk& walk, const Located& at, EvalConfig& eval) {
  const auto read_mode = [&eval](const Walk& w, const Located& mode) {
    read_choice(w, mode, parse_tta_mode, eval.tta_mode);
    // fastai v2 blends with lerp weight 0.25, v1 with beta 0.4: an unset beta follows the mode.
    eval.tta_beta = default_tta_beta(eval.tta_mode);
  };
  read_fields(
      walk, at,
      {field("tta", eval.tta, "also evaluate with test-time augmentation after training"),
       {"tta_mode", read_mode,
        [&eval](YAML::Emitter& out) { write_value(out, tta_mode_name(eval.tta_mode)); },
        [] { return choices_text(parse_tta_mode); },
        "v1: fastai v1's `TTA`, 8 corner-zoom × flip views; v2: fastai v2's `tta`, `tta_n` passes "
        "with the training augmentation",
        false, std::nullopt, nullptr},
       field("tta_beta", eval.tta_beta,
             "final = beta·plain + (1 − beta)·mean of the views; unset, it follows `tta_mode` "
             "(v1: 0.4, v2: 0.25)",
             closed(0, 1, "a number in [0, 1]")),
       field("tta_scale", eval.tta_scale, "v1: zoom factor of each corner view",
             closed(1, 10, "a number from 1 to 10")),
       field("tta_n", eval.tta_n, "v2: augmented passes", closed(1, 64, "an integer in [1, 64]")),
       field("threshold", eval.threshold,
             "multi_label: a class is predicted when its probability is above this (fastai's "
             "`thresh`)",
             closed(0, 1, "a probability in [0, 1]")),
       field("thresholds", read_thresholds, write_optional_list, eval.thresholds,
             "null, or a list of numbers",
             "multi_label: one threshold per class, in the classes' sorted order (`evaluate "
             "--tune-thresholds` writes them into a checkpoint); null: `threshold` for all"),
       field("temperature", eval.temperature,
             "temperature scaling: probabilities (softmax, or multi_label's sigmoids) and losses "
             "come from logits / temperature wherever evaluation runs (validation, TTA, "
             "`evaluate`, `predict`); `ltfit calibrate` fits it; 1: the logits as they are",
             open_open(0, kInfinity, "a finite number > 0")),
       field("top_k", read_top_k, write_top_k, eval.top_k, "auto, or an integer >= 1",
             "single_label: also report top-k accuracy (the target among the k most probable "
             "classes; k above the class count counts as the count) in validation, epochs.csv's "
             "`top_k_accuracy`, TensorBoard and `evaluate`; auto: k = 5 when the model has more "
             "than 5 classes, else none",
             closed(0, 1e6, "auto, or an integer from 1 to 1000000"))});
}

void convert_dist(const Walk& walk, const Located& at, DistConfig& dist) {
  read_fields(
      walk, at,
      {field("backend", parse_dist_backend, dist_backend_name, dist.backend,
             "auto: nccl on CUDA, gloo on CPU; off: never join a group, even under torchrun"),
       field("timeout_seconds", dist.timeout_seconds,
             "a collective or the rendezvous waiting longer fails the run (exit 5)",
             closed(1, 86400, "a number of seconds in [1, 86400]")),
       field("bucket_mb", dist.bucket_mb,
             "MiB of gradients per all-reduce bucket (DistributedDataParallel's 25)",
             closed(0.01, 4096, "a number of MiB in [0.01, 4096]")),
       field("bn_buffers", parse_bn_buffers, bn_buffers_name, dist.bn_buffers,
             "BatchNorm running statistics across ranks: average (the mean over the ranks) or "
             "rank0 (rank 0's, like DDP's `broadcast_buffers`)"),
       field("interface", dist.interface,
             "network interface for Gloo (like `GLOO_SOCKET_IFNAME`); empty: the one that reaches "
             "`MASTER_ADDR`")});
}

}  // namespace

namespace config_internal {

void convert_config(const Walk& walk, const Located& at, Config& config) {
  read_fields(
      walk, at,
      {section("run", convert_run, config.run,
               "what the run is called, where it goes, and its randomness"),
       section("data", convert_data, config.data, "where the images are and how batches are made"),
       section("model", convert_model, config.model, "the network"),
       section("train", convert_train, config.train, "the recipe and how it runs"),
       section("eval", convert_eval, config.eval, "evaluation after training"),
       section("dist", convert_dist, config.dist,
               "data-parallel training, when launched by `torchrun`, `srun` or `RANK`/`WORLD_SIZE` "
               "variables")});
}

}  // namespace config_internal

namespace {

Config convert(const Walk& walk, const YAML::Node& root) {
  Config config;
  config.source = walk.source;
  convert_config(walk, Located{root, ""}, config);
  return config;
}

// ---- loading -------------------------------------------------------------------------------

// Writes `value` at keys[i..] under `node`, creating maps for missing or null parents.
void set_path(YAML::Node node, const std::vector<std::string>& keys, std::size_t i,
              const YAML::Node& value, const Context& context) {
  if (i + 1 == keys.size()) {
    node[keys[i]] = value;
    return;
  }
  const YAML::Node existing = std::as_const(node)[keys[i]];
  if (!existing.IsDefined() || existing.IsNull()) {
    node[keys[i]] = YAML::Node(YAML::NodeType::Map);
  } else if (!existing.IsMap()) {
    const std::vector<std::string> parent(keys.begin(), keys.begin() + i + 1);
    fail_at(context, existing, join(parent, "."), "is " + describe(existing) + ", not a map");
  }
  set_path(node[keys[i]], keys, i + 1, value, context);
}

// Whether the raw text of a `--set` value means null: empty, or YAML's null spellings. Other
// text that YAML reads as null, such as ' ' (the shell has removed the quotes of
// --set data.csv.label_delim=' ') or '#', is that text: a lone space is a common separator.
bool spells_null(const std::string& raw) {
  const std::size_t first = raw.find_first_not_of(" \t");
  if (first == std::string::npos) return raw.empty();
  const std::string text = raw.substr(first, raw.find_last_not_of(" \t") - first + 1);
  return text == "~" || text == "null" || text == "Null" || text == "NULL";
}

void apply_override(YAML::Node& root, const Override& entry, const Context& context) {
  const std::vector<std::string> keys = split(entry.key, '.');
  if (std::any_of(keys.begin(), keys.end(), [](const auto& k) { return k.empty(); })) {
    throw ConfigError("--set expects a dotted key like data.batch_size, got '" + entry.key + "'");
  }
  YAML::Node value;
  try {
    value = YAML::Load(entry.value);
  } catch (const YAML::Exception& e) {
    throw ConfigError("--set " + entry.key + "=" + entry.value + ": invalid YAML value: " + e.msg,
                      "quote strings and close brackets: --set train.lr=[1e-5,1e-3]");
  }
  if (value.IsNull() && !spells_null(entry.value)) value = YAML::Node(entry.value);
  check_unique_keys(context, Located{value, entry.key});
  set_path(root, keys, 0, value, context);
}

// One error for every problem found: the problem itself when there is one; else each problem on
// a line of its own (with its hint, unless the line already says it), in the order found.
ConfigError all_problems(const std::vector<ConfigError>& errors, const std::string& source) {
  if (errors.size() == 1) return errors.front();
  std::string message = std::to_string(errors.size()) + " problems in " + source + ":";
  for (const ConfigError& e : errors) {
    const std::string line = e.what();
    message += "\n  " + line;
    if (!e.hint().empty() && line.find(e.hint()) == std::string::npos &&
        line.find("did you mean") == std::string::npos) {
      message += " (" + e.hint() + ")";
    }
  }
  return ConfigError(message, "fix each of them: every unknown key and invalid value is listed");
}

}  // namespace

Override parse_override(const std::string& text) {
  const std::size_t equals = text.find('=');
  const auto is_space = [](unsigned char c) { return std::isspace(c) != 0; };
  std::string key = equals == std::string::npos ? "" : text.substr(0, equals);
  key.erase(std::remove_if(key.begin(), key.end(), is_space), key.end());
  if (key.empty()) {
    throw ConfigError("--set expects key=value, got '" + text + "'",
                      "for example --set data.batch_size=64");
  }
  return Override{key, text.substr(equals + 1)};
}

namespace {

// A config file that names no run is named after the file (`pets.yaml`: runs/pets), as a run of
// a shipped config is named after it; a file stem that is no valid name keeps the default.
void name_run_after(const std::string& path, const YAML::Node& root, Config& config) {
  if (find_node(root, "run.name").IsDefined()) return;
  const std::string stem = std::filesystem::path(path).stem().string();
  if (stem.empty() || stem == "." || stem == ".." || stem.size() > 200) return;
  config.run.name = stem;
}

Config load_config_text(const std::string& yaml, const std::string& source,
                        const std::vector<Override>& overrides, bool name_from_file) {
  std::vector<ConfigError> errors;
  Walk context{{source, overrides}};
  context.errors = &errors;
  YAML::Node root = load_document(yaml, context);
  if (!root.IsNull() && !root.IsMap()) {
    fail_type(context, Located{root, ""}, "a map with keys run, data, model, train, eval");
  }
  for (const auto& entry : overrides) apply_override(root, entry, context);
  Config config = convert(context, root);
  if (name_from_file) name_run_after(source, root, config);
  std::vector<std::string> broken;  // keys already reported: each key's first broken rule only
  config_internal::validate_with(config, [&](const config_internal::Problem& problem) {
    if (std::find(broken.begin(), broken.end(), problem.path) != broken.end()) return;
    broken.push_back(problem.path);
    const YAML::Node node = find_node(root, problem.path);
    const std::string found = node.IsDefined() ? describe(node) : problem.found;
    errors.push_back(error_at(context, node, problem.path,
                              "expected " + problem.expected + ", got " + found, problem.hint));
  });
  if (!errors.empty()) throw all_problems(errors, source);
  return config;
}

}  // namespace

Config load_config(const std::string& path, const std::vector<Override>& overrides) {
  return load_config_text(read_input_file(path, "config file"), path, overrides,
                          /*name_from_file=*/true);
}

Config load_config_from_string(const std::string& yaml, const std::string& source,
                               const std::vector<Override>& overrides) {
  return load_config_text(yaml, source, overrides, /*name_from_file=*/false);
}

namespace config_internal {

std::vector<KeyDoc> describe_config() {
  std::vector<KeyDoc> keys;
  Walk walk{{"<defaults>", {}}};
  walk.describe = &keys;
  Config defaults;
  convert_config(walk, Located{YAML::Node(YAML::NodeType::Undefined), ""}, defaults);
  return keys;
}

void check_bounds(const Config& config, const Fail& fail, bool list_all) {
  Walk walk{{config.source, {}}};
  walk.check = &fail;
  walk.list_all = list_all;
  Config fields = config;  // the field lists bind mutable references; a checking walk only reads
  convert_config(walk, Located{YAML::Node(YAML::NodeType::Undefined), ""}, fields);
}

}  // namespace config_internal

double parse_duration(const std::string& text, const std::string& key) {
  const auto seconds = duration_seconds(text);
  if (!seconds) {
    throw ConfigError(key + ": expected " + std::string(kDurationExpected) + ", got '" + text +
                      "'");
  }
  return *seconds;
}

}  // namespace ltfit
