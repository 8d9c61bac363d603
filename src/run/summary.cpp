#include "ltfit/run/summary.h"

#include <nlohmann/json.hpp>

#include "ltfit/util/atomic_file.h"
#include "ltfit/util/format.h"
#include "ltfit/util/json.h"
#include "run/optional_json.h"

namespace ltfit {

std::string summary_json(const RunSummary& s) {
  nlohmann::json j = {
      {"run_dir", s.run_dir},
      {"arch", s.arch},
      {"device", s.device},
      {"classes", s.classes},
      {"epochs", s.epochs},
      {"train_images", s.train_images},
      {"train_skipped_images", s.train_skipped_images},
      {"valid_images", s.valid_images},
      {"valid_skipped_images", s.valid_skipped_images},
      {"accuracy", s.accuracy},
      {"error_rate", s.error_rate},
      {"valid_loss", s.valid_loss},
      {"tta_accuracy", optional_json(s.tta_accuracy)},
      {"best_accuracy", s.best_accuracy},
      {"setup_seconds", s.setup_seconds},
      {"train_seconds", s.train_seconds},
      {"tta_seconds", optional_json(s.tta_seconds)},
      {"total_seconds", s.total_seconds},
      {"total_mm_ss", format_mm_ss(s.total_seconds)},
      {"skipped_images", s.skipped_images},
      {"skipped_examples", s.skipped_examples},
      {"world_size", s.world_size},
      {"backend", s.backend},
      {"global_batch", s.global_batch},
      {"weights", s.weights},
      {"stopped_early",
       s.stopped_early.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.stopped_early)},
      {"task", s.multi_label ? "multi_label" : "single_label"},
  };
  // Said plainly: with no validation split the figures above are null, not measured.
  j["validation"] = s.valid_images > 0 ? "valid split"
                                       : "none (data.valid_pct 0): every image trained; the last "
                                         "epoch's weights are the result";
  j["data_cache"] = nullptr;
  if (const auto& c = s.data_cache) {
    const std::uint64_t lookups = c->hits + c->misses;
    j["data_cache"] = {{"hits", c->hits},
                       {"misses", c->misses},
                       {"hit_rate", lookups ? static_cast<double>(c->hits) / lookups : 0.0},
                       {"images", c->images},
                       {"bytes", c->bytes},
                       {"capacity_bytes", c->capacity},
                       {"not_kept", c->not_kept}};
  }
  if (s.multi_label) {
    j["thresholds"] = s.thresholds;
    j["f1_samples"] = s.f1_samples;
    j["f1_macro"] = s.f1_macro;
    j["map"] = s.map;
    j["tta_f1_samples"] = optional_json(s.tta_f1_samples);
    j["tta_f1_macro"] = optional_json(s.tta_f1_macro);
    j["tta_map"] = optional_json(s.tta_map);
  }
  return dump_json(j) + "\n";
}

void write_summary(const std::string& path, const RunSummary& summary) {
  write_text_atomic(path, summary_json(summary));
}

}  // namespace ltfit
