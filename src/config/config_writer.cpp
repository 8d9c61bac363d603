// Writing the resolved config as YAML (config_loader.h's to_yaml): an emitting walk of the
// loader's own field lists (config_yaml.h), so config.yaml holds every key the loader reads, in
// its order, in a form that load_config reads back to an equal Config (numbers in their shortest
// exact text, null-like strings quoted); and the writers of the custom readers' values.
// Thread-safe: no shared state.
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <string>
#include <vector>

#include "config/config_internal.h"
#include "config/config_sections.h"
#include "config/config_yaml.h"
#include "ltfit/config/config_loader.h"
#include "ltfit/config/yaml_reader.h"

namespace ltfit {
namespace config_internal {

void write_value(YAML::Emitter& out, bool value) { out << value; }
void write_value(YAML::Emitter& out, int value) { out << std::to_string(value); }
void write_value(YAML::Emitter& out, std::uint64_t value) { out << value; }
void write_value(YAML::Emitter& out, double value) { out << format_number(value); }
void write_value(YAML::Emitter& out, const std::string& value) { yaml::emit_string(out, value); }

void write_value(YAML::Emitter& out, const std::vector<double>& values) {
  out << YAML::Flow << YAML::BeginSeq;
  for (double v : values) out << format_number(v);
  out << YAML::EndSeq;
}

// "5h50m" for whole seconds (parses back exactly), else the plain number of seconds.
void write_duration(YAML::Emitter& out, const std::optional<double>& seconds) {
  if (!seconds) {
    out << YAML::Null;
    return;
  }
  const double value = *seconds;
  if (value <= 0 || value != std::floor(value) || value > 1e15) {
    out << format_number(value);
    return;
  }
  const auto total = static_cast<long long>(value);
  std::string text;
  if (total / 3600) text += std::to_string(total / 3600) + "h";
  if (total % 3600 / 60) text += std::to_string(total % 3600 / 60) + "m";
  if (total % 60) text += std::to_string(total % 60) + "s";
  out << text;
}

void write_workers(YAML::Emitter& out, const int& workers) {
  out << (workers == 0 ? std::string("auto") : std::to_string(workers));
}

void write_max_pixels(YAML::Emitter& out, const std::uint64_t& pixels) {
  if (pixels == 0) {
    out << YAML::Null;  // no limit
  } else {
    out << pixels;
  }
}

void write_byte_count(YAML::Emitter& out, const std::uint64_t& bytes) { out << bytes; }

void write_formats(YAML::Emitter& out, const std::vector<std::string>& formats) {
  out << YAML::Flow << formats;
}

void write_lr(YAML::Emitter& out, const std::vector<double>& lr) {
  if (lr.size() == 1) {
    write_value(out, lr.front());
  } else {
    write_value(out, lr);
  }
}

void write_optional_list(YAML::Emitter& out, const std::vector<double>& values) {
  if (values.empty()) {
    out << YAML::Null;
  } else {
    write_value(out, values);
  }
}

void write_erasing_value(YAML::Emitter& out, const RandomErasingConfig& erasing) {
  if (erasing.random_value) {
    out << "random";
  } else {
    write_value(out, erasing.value);
  }
}

void write_size_schedule(YAML::Emitter& out, const std::vector<SizeStep>& steps) {
  out << YAML::Flow << YAML::BeginSeq;
  for (const SizeStep& step : steps) {
    out << YAML::Flow << YAML::BeginSeq << step.epoch << step.size << YAML::EndSeq;
  }
  out << YAML::EndSeq;
}

void write_path(YAML::Emitter& out, const std::string& path) { write_value(out, path); }

void write_optional_text(YAML::Emitter& out, const std::optional<std::string>& text) {
  if (text) {
    write_value(out, *text);
  } else {
    out << YAML::Null;
  }
}

void write_top_k(YAML::Emitter& out, const int& top_k) {
  out << (top_k == 0 ? std::string("auto") : std::to_string(top_k));
}

void write_optional_number(YAML::Emitter& out, const std::optional<double>& value) {
  if (value) {
    write_value(out, *value);
  } else {
    out << YAML::Null;
  }
}

void write_pos_weight(YAML::Emitter& out, const ClassWeights& weights) {
  if (weights.kind == ClassWeights::Kind::kNone) {
    out << YAML::Null;
  } else if (weights.kind == ClassWeights::Kind::kBalanced) {
    out << "balanced";
  } else {
    write_value(out, weights.weights);
  }
}

void write_class_weights(YAML::Emitter& out, const ClassWeights& weights) {
  if (weights.kind == ClassWeights::Kind::kList) {
    write_value(out, weights.weights);
  } else {
    out << (weights.kind == ClassWeights::Kind::kNone ? "none" : "balanced");
  }
}

}  // namespace config_internal

std::string to_yaml(const Config& config) {
  YAML::Emitter out;
  config_internal::Walk walk{{config.source, {}}};
  walk.emit = &out;
  Config fields = config;  // the field lists bind mutable references; an emitting walk only reads
  config_internal::convert_config(walk, yaml::Located{YAML::Node(YAML::NodeType::Undefined), ""},
                                  fields);
  return std::string(out.c_str()) + "\n";
}

}  // namespace ltfit
