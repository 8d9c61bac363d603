// Loading and overriding the YAML configuration (config_loader.h).
//
// Pipeline: text -> YAML tree -> `--set` overrides spliced into the tree -> structs (the
// convert_* functions below, the only code that walks the document; enumerations are parsed
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
#include <utility>

#include "config/config_internal.h"
#include "config/config_yaml.h"
#include "ltfit/util/error.h"
#include "ltfit/util/input_file.h"

namespace ltfit {
namespace {

using namespace config_internal;

// ---- tree -> structs: the one place that reads the tree --------------------------------------
// Each map's keys are named once, in read_fields' list: what is read is what is accepted.

void convert_run(const Context& context, const Located& at, RunConfig& run) {
  read_fields(context, at,
              {field("name", run.name), field("out_dir", run.out_dir), field("seed", run.seed),
               field("deterministic", run.deterministic)});
}

void convert_augment(const Context& context, const Located& at, AugmentConfig& augment) {
  read_fields(context, at,
              {field("flip", augment.flip), field("max_rotate", augment.max_rotate),
               field("max_zoom", augment.max_zoom), field("max_lighting", augment.max_lighting),
               field("max_warp", augment.max_warp), field("p_affine", augment.p_affine),
               field("p_lighting", augment.p_lighting)});
}

void convert_data(const Context& context, const Located& at, DataConfig& data) {
  read_fields(context, at,
              {field("root", data.root), field("layout", parse_data_layout, data.layout),
               field("valid_count", data.valid_count), field("image_size", data.image_size),
               field("batch_size", data.batch_size), field("workers", read_workers, data.workers),
               field("augment", convert_augment, data.augment), field("subset", data.subset),
               field("max_pixels", read_max_pixels, data.max_pixels),
               field("formats", read_formats, data.formats)});
}

void convert_model(const Context& context, const Located& at, ModelConfig& model) {
  read_fields(context, at,
              {field("arch", model.arch), field("pretrained", model.pretrained),
               field("head", parse_head_kind, model.head), field("dropout", model.dropout)});
}

void convert_optimizer(const Context& context, const Located& at, OptimizerConfig& optimizer) {
  read_fields(context, at,
              {field("name", parse_optimizer_kind, optimizer.name), field("betas", optimizer.betas),
               field("eps", optimizer.eps), field("weight_decay", optimizer.weight_decay),
               field("wd_bn_bias", optimizer.wd_bn_bias)});
}

void convert_one_cycle(const Context& context, const Located& at, OneCycleConfig& one_cycle) {
  read_fields(context, at,
              {field("pct_start", one_cycle.pct_start), field("div", one_cycle.div),
               field("div_final", one_cycle.div_final), field("moms", one_cycle.moms)});
}

void convert_checkpoint(const Context& context, const Located& at, CheckpointConfig& checkpoint) {
  read_fields(context, at,
              {field("every_minutes", checkpoint.every_minutes), field("keep", checkpoint.keep)});
}

void convert_train(const Context& context, const Located& at, TrainConfig& train) {
  read_fields(
      context, at,
      {field("recipe", parse_recipe, train.recipe), field("epochs", train.epochs),
       field("freeze_epochs", train.freeze_epochs), field("frozen", train.frozen),
       field("lr", read_lr, train.lr), field("optimizer", convert_optimizer, train.optimizer),
       field("one_cycle", convert_one_cycle, train.one_cycle),
       field("precision", parse_precision, train.precision),
       field("channels_last", train.channels_last), field("accumulate", train.accumulate),
       field("clip_grad_norm", train.clip_grad_norm), field("device", train.device),
       field("checkpoint", convert_checkpoint, train.checkpoint),
       field("time_limit", read_duration, train.time_limit_seconds),
       field("profile", train.profile)});
}

void convert_eval(const Context& context, const Located& at, EvalConfig& eval) {
  const auto read_mode = [&eval](const Context& c, const Located& mode) {
    read_choice(c, mode, parse_tta_mode, eval.tta_mode);
    // fastai v2 blends with lerp weight 0.25, v1 with beta 0.4: an unset beta follows the mode.
    eval.tta_beta = default_tta_beta(eval.tta_mode);
  };
  read_fields(context, at,
              {field("tta", eval.tta),
               {"tta_mode", read_mode},
               field("tta_beta", eval.tta_beta),
               field("tta_scale", eval.tta_scale),
               field("tta_n", eval.tta_n)});
}

void convert_dist(const Context& context, const Located& at, DistConfig& dist) {
  read_fields(context, at,
              {field("backend", parse_dist_backend, dist.backend),
               field("timeout_seconds", dist.timeout_seconds), field("bucket_mb", dist.bucket_mb),
               field("bn_buffers", parse_bn_buffers, dist.bn_buffers),
               field("interface", dist.interface)});
}

Config convert(const Context& context, const YAML::Node& root) {
  Config config;
  config.source = context.source;
  read_fields(
      context, Located{root, ""},
      {field("run", convert_run, config.run), field("data", convert_data, config.data),
       field("model", convert_model, config.model), field("train", convert_train, config.train),
       field("eval", convert_eval, config.eval), field("dist", convert_dist, config.dist)});
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
  check_unique_keys(context, Located{value, entry.key});
  set_path(root, keys, 0, value, context);
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

Config load_config(const std::string& path, const std::vector<Override>& overrides) {
  return load_config_from_string(read_input_file(path, "config file"), path, overrides);
}

Config load_config_from_string(const std::string& yaml, const std::string& source,
                               const std::vector<Override>& overrides) {
  const Context context{source, overrides};
  YAML::Node root = load_document(yaml, context);
  if (!root.IsNull() && !root.IsMap()) {
    fail_type(context, Located{root, ""}, "a map with keys run, data, model, train, eval");
  }
  for (const auto& entry : overrides) apply_override(root, entry, context);
  Config config = convert(context, root);
  config_internal::validate_with(config, [&](const config_internal::Problem& problem) {
    const YAML::Node node = find_node(root, problem.path);
    const std::string found = node.IsDefined() ? describe(node) : problem.found;
    fail_at(context, node, problem.path, "expected " + problem.expected + ", got " + found,
            problem.hint);
  });
  return config;
}

double parse_duration(const std::string& text, const std::string& key) {
  const auto seconds = duration_seconds(text);
  if (!seconds) {
    throw ConfigError(key + ": expected " + std::string(kDurationExpected) + ", got '" + text +
                      "'");
  }
  return *seconds;
}

}  // namespace ltfit
