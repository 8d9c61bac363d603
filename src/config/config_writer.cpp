// Writing the resolved config as YAML (config_loader.h's to_yaml): every field, in the order
// of the structs, in a form that load_config reads back to an equal Config (numbers in their
// shortest exact text, null-like strings quoted). Thread-safe: no shared state.
#include "ltfit/config/config_loader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "config/config_internal.h"
#include "ltfit/config/yaml_reader.h"

namespace ltfit {
namespace {

using config_internal::format_number;

// "5h50m" for whole seconds (parses back exactly), else the plain number of seconds.
std::string format_duration(double seconds) {
  if (seconds <= 0 || seconds != std::floor(seconds) || seconds > 1e15) {
    return format_number(seconds);
  }
  const auto total = static_cast<long long>(seconds);
  std::string text;
  if (total / 3600) text += std::to_string(total / 3600) + "h";
  if (total % 3600 / 60) text += std::to_string(total % 3600 / 60) + "m";
  if (total % 60) text += std::to_string(total % 60) + "s";
  return text;
}

void put_plain(YAML::Emitter& out, const char* key, const std::string& text) {
  out << YAML::Key << key << YAML::Value << text;
}

// Strings that a plain scalar would not carry back are double-quoted (and escaped): those YAML
// reads as null, and those with leading or trailing blanks or a control character (a plain
// scalar drops the blanks; yaml-cpp writes a carriage return unescaped, which reads back as a
// line break).
void put_string(YAML::Emitter& out, const char* key, const std::string& value) {
  out << YAML::Key << key << YAML::Value;
  yaml::emit_string(out, value);
}

void put_optional_string(YAML::Emitter& out, const char* key,
                         const std::optional<std::string>& value) {
  if (value) {
    put_string(out, key, *value);
  } else {
    out << YAML::Key << key << YAML::Value << YAML::Null;
  }
}

void put_bool(YAML::Emitter& out, const char* key, bool value) {
  out << YAML::Key << key << YAML::Value << value;
}

void put_list(YAML::Emitter& out, const char* key, const std::vector<double>& values) {
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (double v : values) out << format_number(v);
  out << YAML::EndSeq;
}

void begin_section(YAML::Emitter& out, const char* key) {
  out << YAML::Key << key << YAML::Value << YAML::BeginMap;
}

void emit_run(YAML::Emitter& out, const RunConfig& run) {
  begin_section(out, "run");
  put_string(out, "name", run.name);
  put_string(out, "out_dir", run.out_dir);
  put_plain(out, "seed", std::to_string(run.seed));
  put_bool(out, "deterministic", run.deterministic);
  put_bool(out, "tensorboard", run.tensorboard);
  out << YAML::EndMap;
}

// data.augment: `none` when every augmentation is off, else the map.
void emit_augment(YAML::Emitter& out, const AugmentConfig& a) {
  if (a == config_internal::augment_none()) {
    put_plain(out, "augment", "none");  // loads back as the same values
    return;
  }
  begin_section(out, "augment");
  put_bool(out, "flip", a.flip);
  put_plain(out, "max_rotate", format_number(a.max_rotate));
  put_plain(out, "max_zoom", format_number(a.max_zoom));
  put_plain(out, "max_lighting", format_number(a.max_lighting));
  put_plain(out, "max_warp", format_number(a.max_warp));
  put_plain(out, "p_affine", format_number(a.p_affine));
  put_plain(out, "p_lighting", format_number(a.p_lighting));
  put_bool(out, "random_crop", a.random_crop);
  put_string(out, "on", augment_place_name(a.on));
  put_string(out, "policy", augment_policy_name(a.policy));
  begin_section(out, "rand_augment");
  put_plain(out, "num_ops", std::to_string(a.rand_augment.num_ops));
  put_plain(out, "magnitude", std::to_string(a.rand_augment.magnitude));
  out << YAML::EndMap;
  const RandomErasingConfig& e = a.random_erasing;
  begin_section(out, "random_erasing");
  put_plain(out, "p", format_number(e.p));
  put_list(out, "scale", e.scale);
  put_list(out, "ratio", e.ratio);
  if (e.random_value) {
    put_string(out, "value", "random");
  } else {
    put_plain(out, "value", format_number(e.value));
  }
  out << YAML::EndMap;
  out << YAML::EndMap;
}

void emit_data(YAML::Emitter& out, const DataConfig& data) {
  begin_section(out, "data");
  put_string(out, "root", data.root);
  put_string(out, "layout", data_layout_name(data.layout));
  put_plain(out, "valid_count", std::to_string(data.valid_count));
  begin_section(out, "csv");
  put_string(out, "file", data.csv.file);
  put_string(out, "path_column", data.csv.path_column);
  put_string(out, "label_column", data.csv.label_column);
  put_optional_string(out, "valid_column", data.csv.valid_column);
  put_optional_string(out, "label_delim", data.csv.label_delim);
  put_string(out, "folder", data.csv.folder);
  put_string(out, "suffix", data.csv.suffix);
  out << YAML::EndMap;
  put_string(out, "label_pattern", data.label_pattern);
  put_plain(out, "valid_pct", format_number(data.valid_pct));
  put_string(out, "train_folder", data.train_folder);
  put_string(out, "valid_folder", data.valid_folder);
  out << YAML::Key << "size_schedule" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const SizeStep& step : data.size_schedule) {
    out << YAML::Flow << YAML::BeginSeq << step.epoch << step.size << YAML::EndSeq;
  }
  out << YAML::EndSeq;
  put_plain(out, "subset", format_number(data.subset));
  put_plain(out, "image_size", std::to_string(data.image_size));
  put_plain(out, "batch_size", std::to_string(data.batch_size));
  put_plain(out, "workers", data.workers == 0 ? "auto" : std::to_string(data.workers));
  out << YAML::Key << "max_pixels" << YAML::Value;
  if (data.max_pixels == 0) {
    out << YAML::Null;  // no limit
  } else {
    out << data.max_pixels;
  }
  out << YAML::Key << "formats" << YAML::Value << YAML::Flow << data.formats;
  put_string(out, "cache", data_cache_name(data.cache));
  out << YAML::Key << "cache_bytes" << YAML::Value << data.cache_bytes;
  emit_augment(out, data.augment);
  out << YAML::EndMap;
}

void emit_model(YAML::Emitter& out, const ModelConfig& model) {
  begin_section(out, "model");
  put_string(out, "arch", model.arch);
  put_string(out, "pretrained", pretrained_name(model.pretrained));
  put_string(out, "head", head_kind_name(model.head));
  put_plain(out, "dropout", format_number(model.dropout));
  put_string(out, "task", task_name(model.task));
  out << YAML::EndMap;
}

void emit_optimizer(YAML::Emitter& out, const OptimizerConfig& o, const OneCycleConfig& c) {
  begin_section(out, "optimizer");
  put_string(out, "name", optimizer_kind_name(o.name));
  put_list(out, "betas", o.betas);
  put_plain(out, "eps", format_number(o.eps));
  put_plain(out, "weight_decay", format_number(o.weight_decay));
  put_bool(out, "wd_bn_bias", o.wd_bn_bias);
  put_bool(out, "fused", o.fused);
  out << YAML::EndMap;
  begin_section(out, "one_cycle");
  put_plain(out, "pct_start", format_number(c.pct_start));
  put_plain(out, "div", format_number(c.div));
  put_plain(out, "div_final", format_number(c.div_final));
  put_list(out, "moms", c.moms);
  out << YAML::EndMap;
}

void emit_mixup(YAML::Emitter& out, const MixupConfig& m) {
  begin_section(out, "mixup");
  put_plain(out, "mixup_alpha", format_number(m.mixup_alpha));
  put_plain(out, "cutmix_alpha", format_number(m.cutmix_alpha));
  if (m.cutmix_minmax.empty()) {
    out << YAML::Key << "cutmix_minmax" << YAML::Value << YAML::Null;
  } else {
    put_list(out, "cutmix_minmax", m.cutmix_minmax);
  }
  put_plain(out, "prob", format_number(m.prob));
  put_plain(out, "switch_prob", format_number(m.switch_prob));
  put_string(out, "mode", mixup_mode_name(m.mode));
  out << YAML::EndMap;
}

void emit_class_weights(YAML::Emitter& out, const ClassWeights& w) {
  switch (w.kind) {
    case ClassWeights::Kind::kNone:
      put_string(out, "class_weights", "none");
      return;
    case ClassWeights::Kind::kBalanced:
      put_string(out, "class_weights", "balanced");
      return;
    case ClassWeights::Kind::kList:
      put_list(out, "class_weights", w.weights);
      return;
  }
}

// train.pos_weight: null (none), balanced, or the list.
void emit_pos_weight(YAML::Emitter& out, const ClassWeights& w) {
  if (w.kind == ClassWeights::Kind::kNone) {
    out << YAML::Key << "pos_weight" << YAML::Value << YAML::Null;
  } else if (w.kind == ClassWeights::Kind::kBalanced) {
    put_string(out, "pos_weight", "balanced");
  } else {
    put_list(out, "pos_weight", w.weights);
  }
}

void emit_train(YAML::Emitter& out, const TrainConfig& train) {
  begin_section(out, "train");
  put_string(out, "recipe", recipe_name(train.recipe));
  put_plain(out, "epochs", std::to_string(train.epochs));
  put_plain(out, "freeze_epochs", std::to_string(train.freeze_epochs));
  put_bool(out, "frozen", train.frozen);
  if (train.lr.size() == 1) {
    put_plain(out, "lr", format_number(train.lr.front()));
  } else {
    put_list(out, "lr", train.lr);
  }
  emit_optimizer(out, train.optimizer, train.one_cycle);
  put_string(out, "schedule", schedule_kind_name(train.schedule));
  begin_section(out, "flat_cos");
  put_plain(out, "pct_start", format_number(train.flat_cos.pct_start));
  put_plain(out, "div_final", format_number(train.flat_cos.div_final));
  out << YAML::EndMap;
  put_plain(out, "warmup_epochs", format_number(train.warmup_epochs));
  put_plain(out, "warmup_lr", format_number(train.warmup_lr));
  put_plain(out, "min_lr", format_number(train.min_lr));
  put_list(out, "decay_milestones", train.decay_milestones);
  put_plain(out, "decay_rate", format_number(train.decay_rate));
  put_plain(out, "patience_epochs", std::to_string(train.patience_epochs));
  put_plain(out, "cooldown_epochs", std::to_string(train.cooldown_epochs));
  put_plain(out, "label_smoothing", format_number(train.label_smoothing));
  emit_mixup(out, train.mixup);
  begin_section(out, "ema");
  put_plain(out, "decay", format_number(train.ema.decay));
  put_bool(out, "warmup", train.ema.warmup);
  put_bool(out, "validate", train.ema.validate);
  out << YAML::EndMap;
  begin_section(out, "early_stopping");
  put_string(out, "monitor", monitor_name(train.early_stopping.monitor));
  put_plain(out, "patience", std::to_string(train.early_stopping.patience));
  put_plain(out, "min_delta", format_number(train.early_stopping.min_delta));
  out << YAML::EndMap;
  put_string(out, "plateau_monitor", monitor_name(train.plateau_monitor));
  put_string(out, "best_monitor", monitor_name(train.best_monitor));
  emit_class_weights(out, train.class_weights);
  emit_pos_weight(out, train.pos_weight);
  put_string(out, "precision", precision_name(train.precision));
  put_bool(out, "channels_last", train.channels_last);
  put_plain(out, "accumulate", std::to_string(train.accumulate));
  put_plain(out, "clip_grad_norm", format_number(train.clip_grad_norm));
  put_string(out, "device", device_request_name(train.device));
  begin_section(out, "checkpoint");
  put_plain(out, "every_minutes", format_number(train.checkpoint.every_minutes));
  put_plain(out, "keep", std::to_string(train.checkpoint.keep));
  put_bool(out, "keep_resumable", train.checkpoint.keep_resumable);
  out << YAML::EndMap;
  const auto& limit = train.time_limit_seconds;
  out << YAML::Key << "time_limit" << YAML::Value;
  if (limit) {
    out << format_duration(*limit);
  } else {
    out << YAML::Null;
  }
  put_bool(out, "profile", train.profile);
  out << YAML::EndMap;
}

void emit_eval(YAML::Emitter& out, const EvalConfig& eval) {
  begin_section(out, "eval");
  put_bool(out, "tta", eval.tta);
  put_string(out, "tta_mode", tta_mode_name(eval.tta_mode));
  put_plain(out, "tta_beta", format_number(eval.tta_beta));
  put_plain(out, "tta_scale", format_number(eval.tta_scale));
  put_plain(out, "tta_n", std::to_string(eval.tta_n));
  put_plain(out, "threshold", format_number(eval.threshold));
  if (eval.thresholds.empty()) {
    out << YAML::Key << "thresholds" << YAML::Value << YAML::Null;
  } else {
    put_list(out, "thresholds", eval.thresholds);
  }
  put_plain(out, "temperature", format_number(eval.temperature));
  out << YAML::EndMap;
}

void emit_dist(YAML::Emitter& out, const DistConfig& dist) {
  begin_section(out, "dist");
  put_string(out, "backend", dist_backend_name(dist.backend));
  put_plain(out, "timeout_seconds", format_number(dist.timeout_seconds));
  put_plain(out, "bucket_mb", format_number(dist.bucket_mb));
  put_string(out, "bn_buffers", bn_buffers_name(dist.bn_buffers));
  put_string(out, "interface", dist.interface);
  out << YAML::EndMap;
}

}  // namespace

std::string to_yaml(const Config& config) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  emit_run(out, config.run);
  emit_data(out, config.data);
  emit_model(out, config.model);
  emit_train(out, config.train);
  emit_eval(out, config.eval);
  emit_dist(out, config.dist);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace ltfit
