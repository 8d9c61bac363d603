// An experiment plan (`ltfit experiment --plan FILE`) and the published figures it is compared
// with (the study file), both read from YAML.
//
// A plan names a base config, the study file, overrides shared by every run (`set:`) and the
// runs, each a label, the study run it reproduces, its own `set:` overrides (key -> YAML value,
// the same meaning as `--set key=value`), optionally the GPUs it trains on (`gpus:`) and the
// point where it is killed and resumed (`kill_at_epoch:`). Paths in
// a plan are relative to the plan file.
// The study file holds the study's platforms and, per run, each platform's wall time or a note,
// and optionally published multi-GPU speed-ups (`scaling:`) that the report compares with.
// Loading checks the shape of both files (unknown keys, with a "did you mean", and keys written
// twice are errors naming file:line); override values are checked by the runs themselves, so one
// bad run does not stop the others. Plain values; the functions are thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ltfit/config/config_loader.h"

namespace ltfit {

// One platform of the study (a column of its table).
struct StudyPlatform {
  std::string id;          // key used by the study's runs, e.g. "kaggle"
  std::string name;        // shown in reports, e.g. "Kaggle"
  std::string gpu;         // e.g. "Tesla P100"
  std::string gpu_memory;  // as the study states it, e.g. "11.17 GiB (12.0 GB)"
  std::string software;    // e.g. "CUDA 9.2.148, cuDNN 7.4.1"
};

// One platform's figure for one run: a wall time, or a note instead (crashed, not run).
struct StudyTime {
  std::optional<double> seconds;  // the leading mm:ss of `text`; null when none was measured
  std::string text;               // as written: "11:17", "18:38 at the memory limit", "—"
};

// One run of the study (a row of its table).
struct StudyRun {
  std::string id;                // referenced by a plan run's `study_run`
  std::string label;             // e.g. "3 epochs, bs 16, fp32"
  std::vector<StudyTime> times;  // one per platform, in StudyFigures::platforms order
};

// A published multi-GPU speed-up: `gpus` GPUs train `speedup` times as fast as one.
struct StudyScaling {
  std::string platform;  // e.g. "Kaggle 2× Tesla T4"
  int gpus = 2;          // GPUs of the multi-GPU figure (>= 2)
  double speedup = 1.0;  // over one GPU of the same kind, e.g. 1.8
  std::string source;    // where the figure was published, in words
  std::string note;      // how it was measured, e.g. "TensorFlow MirroredStrategy"; "" for none
};

// The study's published figures.
struct StudyFigures {
  std::string source;             // the file they came from; "" when the plan names none
  std::string title;              // e.g. "Kaggle P100 vs Colab K80 (2019)"
  std::string task;               // what was trained, in words
  std::string time_measured;      // what the times include, e.g. "training + TTA, wall clock"
  std::string accuracy;           // the accuracy the study reports, in words
  std::int64_t train_images = 0;  // the study's training images
  std::int64_t valid_images = 0;  // the study's validation images
  std::vector<Override> setup;    // config keys as the study had them (model.arch: resnet34)
  std::vector<StudyPlatform> platforms;
  std::vector<StudyRun> runs;
  std::vector<StudyScaling> scaling;  // multi-GPU speed-ups; empty when the file gives none

  // The run with `id`, or nullptr.
  const StudyRun* find(const std::string& id) const;
};

// A plan run's `gpus:`: how many GPUs it trains on.
//   absent:  one `ltfit train` process on train.device, exactly as without the key;
//   1:       the same process, but the run needs a GPU (n/a on a machine without one);
//   N >= 2:  N processes under torchrun, one per GPU, data-parallel (data.batch_size is global);
//   all:     every GPU of the machine (one process when it has one).
struct RunGpus {
  bool given = false;  // false: the key is absent
  bool all = false;    // `all`
  int count = 0;       // N when given and not `all`

  // The GPUs it trains on where the machine has `machine_gpus`; 0 when not given.
  int resolve(int machine_gpus) const { return !given ? 0 : all ? machine_gpus : count; }
  // As written: "2", "all"; "" when not given.
  std::string text() const { return !given ? "" : all ? "all" : std::to_string(count); }
};

// One run of a plan.
struct PlanRun {
  std::string id;                   // run directory name under <out>/runs/ ([A-Za-z0-9._-]+)
  std::string label;                // human label for tables and charts
  std::string study_run;            // the study run it reproduces; "" for none
  std::vector<Override> overrides;  // its `set:`, in file order, values as YAML text
  RunGpus gpus;                     // its `gpus:`
  // Its `kill_at_epoch:`: the run is killed (SIGKILL, as a machine that disconnects) this far
  // into training, 25.5 halfway through the 26th epoch, and started again with --resume auto;
  // the report states the time the cut cost. null: never killed.
  std::optional<double> kill_at_epoch;
  int line = 0;  // 1-based line of the run in the plan file
};

// A whole plan.
struct ExperimentPlan {
  std::string source;               // the plan file
  std::string name;                 // names the default report directory
  std::string base;                 // base config path (resolved against the plan's directory)
  std::vector<Override> overrides;  // top-level `set:`: applied to every run before its own
  std::vector<PlanRun> runs;        // in order
  StudyFigures study;               // the study file's figures (empty when the plan names none)
};

// Reads a plan and the study file it names; throws ConfigError naming file:line and key.
ExperimentPlan load_experiment_plan(const std::string& path);

// Same from text: `source` names it in messages, `plan_dir` resolves relative paths. The study
// file is not read (plan.study.source holds its resolved path).
ExperimentPlan parse_experiment_plan(const std::string& yaml, const std::string& source,
                                     const std::string& plan_dir);

// Reads a study file; throws ConfigError naming file:line and key.
StudyFigures load_study_figures(const std::string& path);
StudyFigures parse_study_figures(const std::string& yaml, const std::string& source);

// Checks that every plan run's study_run names a run of `study`; ConfigError at the run's line.
void check_study_links(const ExperimentPlan& plan, const StudyFigures& study);

// The leading "mm:ss" or "h:mm:ss" of `text` in seconds ("18:38 at the limit" -> 1118), or null.
std::optional<double> parse_leading_mm_ss(const std::string& text);

}  // namespace ltfit
