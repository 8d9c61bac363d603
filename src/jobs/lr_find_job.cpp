// `ltfit lr-find`'s work: see lr_find_job.h.
#include "ltfit/jobs/lr_find_job.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <sstream>

#include "ltfit/jobs/output_check.h"
#include "ltfit/jobs/standard_hook_set.h"
#include "ltfit/jobs/training_setup.h"
#include "ltfit/pictures/plot.h"
#include "ltfit/run/run_dir.h"
#include "ltfit/train/recipe.h"
#include "ltfit/util/atomic_file.h"
#include "ltfit/util/device.h"
#include "ltfit/util/error.h"
#include "ltfit/util/output_dir.h"
#include "ltfit/util/precision.h"

namespace ltfit {

namespace {

void write_outputs(const std::filesystem::path& dir, const LrFindResult& r) {
  std::ostringstream csv;
  csv << "step,lr,loss,smoothed_loss\n";
  for (std::size_t i = 0; i < r.lrs.size(); ++i) {
    csv << i << ',' << r.lrs[i] << ',' << r.losses[i] << ',' << r.smoothed[i] << '\n';
  }
  write_text_atomic((dir / "lr_find.csv").string(), csv.str());
  const LineChart chart = lr_find_chart(r);
  write_line_chart((dir / "lr_find.png").string(), chart.x, chart.series, chart.options);
}

}  // namespace

LineChart lr_find_chart(const LrFindResult& r) {
  LineChart chart;
  chart.options.title = "lr_find: smoothed training loss";
  chart.options.x_label = "learning rate (log)";
  chart.options.y_label = "loss";
  chart.options.log_x = true;
  chart.options.width = 900;
  if (r.valley) {
    chart.options.markers.push_back({fmt::format("valley: {:.3g}", *r.valley), *r.valley});
  }
  if (r.steepest) {
    chart.options.markers.push_back({fmt::format("steepest: {:.3g}", *r.steepest), *r.steepest});
  }
  // As fastai's Recorder.plot: leave out the first 10 and last 5 points (warm-up noise and the
  // divergence spike that would flatten the rest of the curve).
  const std::size_t skip_start = 10, skip_end = 5;
  const bool skip = r.lrs.size() > skip_start + skip_end + 2;
  const auto begin = static_cast<std::ptrdiff_t>(skip ? skip_start : 0);
  const auto end = static_cast<std::ptrdiff_t>(r.lrs.size() - (skip ? skip_end : 0));
  chart.x.assign(r.lrs.begin() + begin, r.lrs.begin() + end);
  chart.series = {{"smoothed loss", {r.smoothed.begin() + begin, r.smoothed.begin() + end}}};
  return chart;
}

LrFindJobResult run_lr_find_job(Config config, const LrFindJobOptions& job) {
  std::filesystem::path dir;
  std::optional<OpenRunDir> run_dir;  // holds the lock on the default directory until the end
  if (job.out.empty()) {
    config.run.name += "-lr_find";
    run_dir = create_run_dir(config.run, std::nullopt);
    dir = run_dir->path;
    std::error_code ec;
    std::filesystem::remove(dir / "checkpoints", ec);  // a sweep writes none (empty: removed)
  } else {
    dir = job.out;
    check_outputs_not_inputs(dir, {"lr_find.csv", "lr_find.png"}, "the output folder (--out)",
                             config_inputs(config));
    create_output_dir(dir, "output folder (--out)");
  }
  const torch::Device device = resolve_device(config.train.device);
  // The head's initial weights and the dropout masks, as a training run draws them: the same
  // config gives the same sweep and suggestions (unseeded, each run drew a new head).
  torch::manual_seed(config.run.seed);
  TrainingSetup setup = make_training_setup(config, device, /*with_valid=*/false);
  check_precision(config.train.precision, device);
  LrFindOptions options;
  options.num_steps = job.steps;
  // As fastai, on the model as the recipe starts it (frozen for fine_tune).
  options.frozen = plan_recipe(config.train).front().frozen;
  spdlog::info("lr-find: {} steps from {:g} to {:g}, {}{}, {}", options.num_steps, options.start_lr,
               options.end_lr, precision_name(config.train.precision),
               config.train.channels_last ? ", channels_last" : "",
               options.frozen ? "body frozen, as the recipe's first stage trains (fine_tune)"
                              : "every layer trainable, as the recipe trains");
  // The training run's precision and memory format: the sweep measures what training will do.
  const TrainerOptions trainer = trainer_options(config, setup, device);
  const StandardHookSet hooks(config, HookPurpose::kLrFind, setup.index.classes.size());
  LrFindJobResult result;
  try {
    result.sweep = lr_find(setup.model, *setup.optimizer, *setup.train_loader, trainer, options,
                           hooks.hooks());
  } catch (...) {
    rethrow_naming_batch_size(config.data.batch_size);
  }
  write_outputs(dir, result.sweep);
  result.dir = dir.string();
  const LrFindResult& r = result.sweep;
  spdlog::info("lr-find: {} steps{}; suggestions: valley {:.3g}, steepest {:.3g}; wrote {}",
               r.lrs.size(), r.diverged ? " (stopped: loss diverged)" : "", r.valley.value_or(NAN),
               r.steepest.value_or(NAN), result.dir);
  return result;
}

}  // namespace ltfit
