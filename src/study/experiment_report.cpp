// report.md of an experiment (experiment_report.h): the machine, the settings, the results
// table beside the study's figures and speed-ups, and the charts. Every number comes from the
// rows (read from the run directories) or the study file.
#include <spdlog/fmt/fmt.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "ltfit/config/config_loader.h"
#include "ltfit/study/experiment_report.h"
#include "ltfit/util/error.h"
#include "ltfit/util/format.h"

namespace ltfit {
namespace {

namespace fs = std::filesystem;
const char* const kNone = "—";

std::string mm_ss(const std::optional<double>& seconds) {
  return seconds ? format_mm_ss(*seconds) : kNone;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::string percent(const std::optional<double>& fraction) {
  return fraction ? fmt::format("{:.2f} %", 100.0 * *fraction) : kNone;
}

bool is_rehearsal(const std::vector<ExperimentRow>& rows) {
  return std::any_of(rows.begin(), rows.end(), [](const auto& r) { return r.subset < 1.0; });
}

// The time this machine is compared with: measured, or the full-size estimate in a rehearsal.
std::optional<double> compared_seconds(const ExperimentRow& row) {
  return row.subset < 1.0 ? row.estimated_total_seconds() : row.total_seconds;
}

// The first row that has a run directory with files in it.
const ExperimentRow* first_run(const std::vector<ExperimentRow>& rows) {
  for (const auto& r : rows)
    if (r.outcome.status != RunStatus::kNotApplicable && fs::exists(r.outcome.run_dir)) return &r;
  return nullptr;
}

// env.json's value at `path` ("cpu.model") as text: "—" when missing or "none".
std::string env_text(const nlohmann::json& env, const std::string& path) {
  const nlohmann::json* j = &env;
  for (std::size_t start = 0; start <= path.size();) {
    const std::size_t dot = std::min(path.find('.', start), path.size());
    const std::string key = path.substr(start, dot - start);
    if (!j->is_object() || !j->contains(key)) return kNone;
    j = &(*j)[key];
    start = dot + 1;
  }
  if (j->is_string()) return j->get<std::string>() == "none" ? kNone : j->get<std::string>();
  if (j->is_number_float()) return fmt::format("{:.1f}", j->get<double>());
  return j->is_null() ? kNone : j->dump();
}

// One line per GPU: "NVIDIA H200, 143771 MiB = 140.4 GiB, compute capability 9.0".
std::vector<std::pair<std::string, std::string>> gpu_rows(const nlohmann::json& env) {
  std::vector<std::pair<std::string, std::string>> rows;
  const auto gpus = env.contains("gpus") ? env["gpus"] : nlohmann::json::array();
  for (std::size_t i = 0; gpus.is_array() && i < gpus.size(); ++i) {
    const auto& g = gpus[i];
    const bool has_mib = g.is_object() && g.contains("memory_mib") && g["memory_mib"].is_number();
    const std::string mib = has_mib ? fmt::format("{:.0f}", g["memory_mib"].get<double>()) : kNone;
    rows.emplace_back(
        gpus.size() == 1 ? "GPU" : fmt::format("GPU {}", i),
        fmt::format("{}, {} MiB = {} GiB, compute capability {}", env_text(g, "name"), mib,
                    env_text(g, "memory_gib"), env_text(g, "compute_capability")));
  }
  if (rows.empty()) rows.emplace_back("GPU", "none");
  return rows;
}

// The machine's profile as a short table (`ltfit envinfo` prints all of it).
std::string machine_table(const nlohmann::json& env) {
  const auto t = [&](const char* path) { return env_text(env, path); };
  std::vector<std::pair<std::string, std::string>> rows = {
      {"CPU", t("cpu.model")},
      {"cores",
       fmt::format("{} physical, {} threads, {} available to ltfit", t("cpu.physical_cores"),
                   t("cpu.logical_threads"), t("cpu.available_cores"))},
      {"memory",
       fmt::format("{} GiB ({} GiB available)", t("memory.total_gib"), t("memory.available_gib"))},
      {"/dev/shm", fmt::format("{} GiB ({} GiB free)", t("shm.total_gib"), t("shm.free_gib"))}};
  const auto gpus = gpu_rows(env);
  rows.insert(rows.end(), gpus.begin(), gpus.end());
  rows.insert(rows.end(),
              {{"driver", t("driver_version")},
               {"CUDA runtime", t("cuda_runtime")},
               {"cuDNN", t("cudnn_version")},
               {"LibTorch", fmt::format("{} (built with CUDA {}, cuDNN {})", t("libtorch_version"),
                                        t("libtorch_cuda"), t("libtorch_cudnn"))},
               {"OpenCV", t("opencv_version")},
               {"OS", fmt::format("{}, {}", t("os"), t("kernel"))},
               {"container", t("container")},
               {"ltfit", fmt::format("{} ({})", t("ltfit_version"), t("compiler"))}});
  std::string out = "| item | value |\n|---|---|\n";
  for (const auto& [item, value] : rows) out += "| " + item + " | " + markdown_cell(value) + " |\n";
  return out;
}

std::string environment_section(const std::vector<ExperimentRow>& rows) {
  std::string out = "## This machine\n\n";
  const ExperimentRow* first = first_run(rows);
  const fs::path path = first ? fs::path(first->outcome.run_dir) / "env.json" : fs::path();
  std::ifstream in(path);
  const auto env = in ? nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false)
                      : nlohmann::json(nlohmann::json::value_t::discarded);
  if (env.is_discarded()) {
    return out + "env.json missing" + (first ? " (" + path.string() + ")" : " (no run ran)") +
           "; `ltfit envinfo` prints the machine's profile.\n\n";
  }
  out += "From `" + path.string() + "` (all of it: `ltfit envinfo`):\n\n";
  return out + machine_table(env) + "\n";
}

// Config keys of the study's setup that `config` does not match.
std::vector<std::string> setup_differences(const Config& config, const StudyFigures& study) {
  std::vector<std::string> differences;
  const std::string yaml = to_yaml(config);
  for (const auto& o : study.setup) {
    try {
      Config as_study = load_config_from_string(yaml, config.source, {o});
      if (!(as_study == config)) differences.push_back(o.key + " (the study: " + o.value + ")");
    } catch (const ConfigError&) {
      differences.push_back(o.key + " (the study: " + o.value + ")");
    }
  }
  return differences;
}

std::string settings_section(const ExperimentPlan& plan, const std::vector<ExperimentRow>& rows) {
  const ExperimentRow* first = first_run(rows);
  if (!first || !first->outcome.config) return "";
  const Config& c = *first->outcome.config;
  std::string out = "## Settings shared by the runs\n\nFrom `" + first->outcome.run_dir +
                    "/config.yaml` (each run's own settings are in the table):\n\n";
  out += fmt::format("- model: {}, pretrained {}, head {}\n", c.model.arch,
                     pretrained_name(c.model.pretrained), head_kind_name(c.model.head));
  out += fmt::format("- data: {} ({}), image size {} px, data.subset {}\n", c.data.root,
                     data_layout_name(c.data.layout), c.data.image_size, c.data.subset);
  std::vector<std::string> lr_texts;
  for (const double lr : c.train.lr) lr_texts.push_back(fmt::format("{:g}", lr));
  out += fmt::format("- train: recipe {}{}, lr {}, device {}, seed {}\n",
                     recipe_name(c.train.recipe), c.train.frozen ? " (body frozen)" : "",
                     join(lr_texts), device_request_name(c.train.device), c.run.seed);
  out += fmt::format("- images: {} train / {} validation measured", first->train_images,
                     first->valid_images);
  if (first->subset < 1.0) {
    out += fmt::format(" (≈ {:.0f} / {:.0f} at full size)", first->train_images / first->subset,
                       first->valid_images / first->subset);
  }
  if (plan.study.train_images > 0) {
    out += fmt::format("; the study: {} / {}", plan.study.train_images, plan.study.valid_images);
  }
  out += "\n";
  const auto differences = setup_differences(c, plan.study);
  if (!differences.empty()) {
    out += "\n**Not the study's setup**: " + join(differences) +
           ". These runs measure a different workload; the speed-ups below compare machines "
           "doing different amounts of work.\n";
  }
  return out + "\n";
}

std::string status_cell(const ExperimentRow& r) {
  const RunOutcome& o = r.outcome;
  if (o.status == RunStatus::kOk) return "ok";
  return "**" + std::string(run_status_name(o.status)) + "**: " + markdown_cell(o.reason);
}

std::string ratio(const std::optional<double>& study, const std::optional<double>& ours) {
  if (!study || !ours || *ours <= 0) return kNone;
  return fmt::format("{:.2f}×", *study / *ours);
}

std::string table_header(const ExperimentPlan& plan, bool rehearsal) {
  std::string head = "| run | status | train | TTA | total | images/s | accuracy | TTA accuracy |";
  if (rehearsal) head += " **estimated** full-size total |";
  for (const auto& p : plan.study.platforms) {
    head += fmt::format(" {0} (study) | speed-up vs {0}{1} |", markdown_cell(p.name),
                        rehearsal ? " (from estimate)" : "");
  }
  std::string rule = "|";
  const auto columns = std::count(head.begin(), head.end(), '|') - 1;
  for (long i = 0; i < columns; ++i) rule += i < 2 ? "---|" : "--:|";
  return head + "\n" + rule + "\n";
}

std::string table_row(const ExperimentPlan& plan, const ExperimentRow& r, bool rehearsal) {
  std::string line = "| " + markdown_cell(r.outcome.label) + " | " + status_cell(r) + " | " +
                     mm_ss(r.train_seconds) + " | " + mm_ss(r.tta_seconds) + " | " +
                     mm_ss(r.total_seconds) + " | " +
                     (r.images_per_second ? fmt::format("{:.1f}", *r.images_per_second) : kNone) +
                     " | " + percent(r.accuracy) + " | " + percent(r.tta_accuracy) + " |";
  if (rehearsal) {
    const auto estimate = r.estimated_total_seconds();
    line += " " + (estimate ? "~" + format_mm_ss(*estimate) + " (estimate)" : kNone) + " |";
  }
  const StudyRun* study = plan.study.find(r.outcome.study_run);
  for (std::size_t p = 0; p < plan.study.platforms.size(); ++p) {
    const StudyTime* t = study ? &study->times[p] : nullptr;
    const std::string text = t && !t->text.empty() ? markdown_cell(t->text) : kNone;
    line += " " + text + " | " + ratio(t ? t->seconds : std::nullopt, compared_seconds(r)) + " |";
  }
  return line + "\n";
}

std::string results_section(const ExperimentPlan& plan, const std::vector<ExperimentRow>& rows) {
  const bool rehearsal = is_rehearsal(rows);
  std::string out = "## Results\n\n" + table_header(plan, rehearsal);
  for (const auto& r : rows) out += table_row(plan, r, rehearsal);
  out +=
      "\nTimes are mm:ss wall clock: train (including per-epoch validation) + TTA = total, "
      "as the study counts them. Speed-up = the study's time / this machine's time "
      "(> 1: this machine is faster).";
  if (rehearsal) {
    out +=
        " In this rehearsal the speed-ups use the **estimated** full-size time, so they are "
        "estimates too.";
  }
  return out + "\n\n";
}

// The GPUs a row trained on, as the plan asked: "2", "all (8)".
std::string gpus_text(const RunOutcome& o) {
  return o.gpus.all ? fmt::format("all ({})", o.machine_gpus) : o.gpus.text();
}

// The 1-GPU row the others are compared with: the first `gpus:` row on one GPU that has a time.
const ExperimentRow* scaling_baseline(const std::vector<ExperimentRow>& rows) {
  for (const auto& r : rows) {
    const RunOutcome& o = r.outcome;
    if (o.gpus.resolve(o.machine_gpus) == 1 && o.status == RunStatus::kOk && r.train_seconds &&
        *r.train_seconds > 0) {
      return &r;
    }
  }
  return nullptr;
}

std::string published_cell(const StudyFigures& study, int gpus) {
  for (const auto& s : study.scaling)
    if (s.gpus == gpus) return fmt::format("{:.2f}× ({})", s.speedup, markdown_cell(s.platform));
  return kNone;
}

std::string scaling_row(const StudyFigures& study, const ExperimentRow& r,
                        const ExperimentRow* baseline) {
  const RunOutcome& o = r.outcome;
  const int gpus = o.gpus.resolve(o.machine_gpus);
  std::string speedup = "n/a", efficiency = "n/a";
  if (&r == baseline) {
    speedup = "1.00× (baseline)";
    efficiency = "100 %";
  } else if (baseline && o.status == RunStatus::kOk && r.train_seconds && *r.train_seconds > 0) {
    const double s = *baseline->train_seconds / *r.train_seconds;
    speedup = fmt::format("{:.2f}×", s);
    if (gpus > 0) efficiency = fmt::format("{:.0f} %", 100.0 * s / gpus);
  }
  const std::string images_per_second =
      r.images_per_second ? fmt::format("{:.1f}", *r.images_per_second) : kNone;
  return "| " + markdown_cell(o.label) + " | " + gpus_text(o) + " | " + status_cell(r) + " | " +
         mm_ss(r.train_seconds) + " | " + images_per_second + " | " + speedup + " | " + efficiency +
         " | " + published_cell(study, gpus) + " |\n";
}

std::string scaling_section(const StudyFigures& study, const std::vector<ExperimentRow>& rows) {
  const bool any =
      std::any_of(rows.begin(), rows.end(), [](const auto& r) { return r.outcome.gpus.given; });
  if (!any) return "";
  std::string out =
      "## Multi-GPU scaling\n\nThe runs with `gpus:` train the same global batch on 1, 2 and all "
      "GPUs of this machine (2 or more: one process per GPU under torchrun, data-parallel). "
      "Speed-up = the 1-GPU run's train time / this run's (> 1: faster); efficiency = speed-up / "
      "GPUs. **n/a**: not run here, or no 1-GPU time to compare with.\n\n";
  for (const auto& s : study.scaling) {
    out += fmt::format("- Published: {} trains {:.2f}× as fast as one GPU ({}{}).\n", s.platform,
                       s.speedup, s.source, s.note.empty() ? "" : "; " + s.note);
  }
  if (!study.scaling.empty()) out += "\n";
  out +=
      "| run | GPUs | status | train | images/s | speed-up vs 1 GPU | efficiency | published |\n"
      "|---|---|---|--:|--:|--:|--:|--:|\n";
  const ExperimentRow* baseline = scaling_baseline(rows);
  for (const auto& r : rows)
    if (r.outcome.gpus.given) out += scaling_row(study, r, baseline);
  return out + "\n";
}

std::string study_section(const StudyFigures& study) {
  if (study.source.empty()) return "";
  std::string out = "## The study: " + study.title + "\n\nFrom `" + study.source + "`. " +
                    study.task + ". Time measured: " + study.time_measured + "; " + study.accuracy +
                    ".\n\n";
  for (const auto& p : study.platforms) {
    out += "- " + p.name + ": " + p.gpu + ", GPU memory " + p.gpu_memory + ", " + p.software + "\n";
  }
  return out + "\n";
}

std::string title_section(const ExperimentPlan& plan, const std::vector<ExperimentRow>& rows,
                          const ReportContext& context) {
  const bool rehearsal = is_rehearsal(rows);
  std::string out = "# Experiment `" + plan.name + "`" +
                    (rehearsal ? " — REHEARSAL on a subset of the images" : "") + "\n\n";
  if (rehearsal) {
    const double subset = std::min_element(rows.begin(), rows.end(), [](auto& a, auto& b) {
                            return a.subset < b.subset;
                          })->subset;
    out += fmt::format(
        "> **Rehearsal, not a measurement of the full study.** The runs used data.subset = {} "
        "(that fraction of each class in both splits). The measured columns are for that subset. "
        "The *estimated full-size total* is total / {}: training time and TTA time both scale "
        "with the number of images (same epochs, same batches per image), so it is an "
        "**estimate**, shown only in its own column and as lighter hatched bars.\n\n",
        subset, subset);
  }
  out += "Plan `" + plan.source + "`, base config `" + plan.base + "`";
  if (!context.overrides.empty()) {
    out += ", command-line overrides:";
    for (const auto& o : context.overrides) out += " `" + o.key + "=" + o.value + "`";
  }
  const auto count = [&](RunStatus s) {
    return std::count_if(rows.begin(), rows.end(), [&](auto& r) { return r.outcome.status == s; });
  };
  out += fmt::format(". {} runs: {} ok, {} failed, {} not applicable here", rows.size(),
                     count(RunStatus::kOk), count(RunStatus::kFailed),
                     count(RunStatus::kNotApplicable));
  if (context.wall_seconds) out += "; the plan took " + format_mm_ss(*context.wall_seconds);
  return out + ".\n\n";
}

}  // namespace

std::string markdown_cell(const std::string& text) {
  std::string out;
  for (const char c : text)
    out += c == '|' ? std::string("\\|") : c == '\n' ? " " : std::string(1, c);
  return out;
}

std::string experiment_report_markdown(const ExperimentPlan& plan,
                                       const std::vector<ExperimentRow>& rows,
                                       const ReportContext& context) {
  return title_section(plan, rows, context) + environment_section(rows) +
         settings_section(plan, rows) + results_section(plan, rows) + cut_section(rows) +
         scaling_section(plan.study, rows) + study_section(plan.study) +
         "## Charts\n\n![Total time per run](total_time.png)\n\n"
         "![Training loss and learning rate per step](curves.png)\n";
}

}  // namespace ltfit
