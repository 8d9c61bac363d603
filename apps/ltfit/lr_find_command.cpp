// `ltfit lr-find`: fastai's LR range test on the config's model and data; writes lr_find.csv
// and lr_find.png and prints the suggestions.
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "cli_common.h"
#include "commands.h"
#include "ltfit/config/config_loader.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/data/loader.h"
#include "ltfit/data/plot.h"
#include "ltfit/model/model_factory.h"
#include "ltfit/run/run_dir.h"
#include "ltfit/train/lr_finder.h"
#include "ltfit/train/optimizer.h"
#include "ltfit/train/recipe.h"
#include "ltfit/util/device.h"
#include "ltfit/util/json.h"
#include "ltfit/util/output_dir.h"

namespace ltfit::cli {

namespace {

struct LrFindArgs {
  std::string config;
  std::vector<std::string> sets;
  std::string out;
  int steps = 100;
  bool json = false;
};

void write_outputs(const std::filesystem::path& dir, const LrFindResult& r) {
  std::ofstream csv(dir / "lr_find.csv");
  csv << "step,lr,loss,smoothed_loss\n";
  for (std::size_t i = 0; i < r.lrs.size(); ++i) {
    csv << i << ',' << r.lrs[i] << ',' << r.losses[i] << ',' << r.smoothed[i] << '\n';
  }
  ChartOptions chart;
  chart.title = "lr_find: smoothed training loss";
  chart.x_label = "learning rate (log)";
  chart.y_label = "loss";
  chart.log_x = true;
  chart.marker_x = r.valley;
  // As fastai's Recorder.plot: leave out the first 10 and last 5 points (warm-up noise and the
  // divergence spike that would flatten the rest of the curve).
  const std::size_t skip_start = 10, skip_end = 5;
  if (r.lrs.size() > skip_start + skip_end + 2) {
    const std::vector<double> lrs(r.lrs.begin() + skip_start, r.lrs.end() - skip_end);
    const std::vector<double> smooth(r.smoothed.begin() + skip_start, r.smoothed.end() - skip_end);
    write_line_chart((dir / "lr_find.png").string(), lrs, {{"smoothed loss", smooth}}, chart);
  } else {
    write_line_chart((dir / "lr_find.png").string(), r.lrs, {{"smoothed loss", r.smoothed}}, chart);
  }
}

nlohmann::json optional_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

void run_lr_find(const LrFindArgs& args) {
  Config config = load_cli_config(args.config, args.sets);
  std::filesystem::path dir;
  std::optional<OpenRunDir> run_dir;  // holds the lock on the default directory until the end
  if (args.out.empty()) {
    config.run.name += "-lr_find";
    run_dir = create_run_dir(config.run, std::nullopt);
    dir = run_dir->path;
  } else {
    dir = args.out;
    create_output_dir(dir, "output folder (--out)");
  }
  const torch::Device device = resolve_device(config.train.device);
  const DatasetIndex index = index_dataset(config.data, config.run.seed);
  Loader train(index.train, make_loader_options(config, /*train=*/true));
  ResNet model = build_model(config.model, static_cast<std::int64_t>(index.classes.size()));
  model->to(device);
  check_precision(config.train.precision, device);
  if (config.train.channels_last) set_channels_last(model);
  auto optimizer = make_optimizer(config.train.optimizer, model->layer_group_parameters());
  LrFindOptions options;
  options.num_steps = args.steps;
  // As fastai, on the model as the recipe starts it (frozen for fine_tune).
  options.frozen = plan_recipe(config.train).front().frozen;
  spdlog::info("lr-find: {} steps from {:g} to {:g}, {}{}", options.num_steps, options.start_lr,
               options.end_lr, config.train.precision,
               config.train.channels_last ? ", channels_last" : "");
  const LrFindResult result = naming_batch_size_on_oom(config.data.batch_size, [&] {
    // The training run's precision and memory format: the sweep measures what training will do.
    return lr_find(model, *optimizer, train,
                   {device, config.train.channels_last, config.train.precision}, options);
  });
  write_outputs(dir, result);
  spdlog::info("lr-find: {} steps{}; suggestions: valley {:.3g}, steepest {:.3g}; wrote {}",
               result.lrs.size(), result.diverged ? " (stopped: loss diverged)" : "",
               result.valley.value_or(NAN), result.steepest.value_or(NAN), dir.string());
  if (args.json) {
    std::cout << dump_json(nlohmann::json{{"steps", result.lrs.size()},
                                          {"diverged", result.diverged},
                                          {"valley", optional_json(result.valley)},
                                          {"steepest", optional_json(result.steepest)},
                                          {"dir", dir.string()}})
              << std::endl;
  }
}

}  // namespace

void add_lr_find_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<LrFindArgs>();
  CLI::App* cmd = app.add_subcommand("lr-find",
                                     "fastai's learning-rate range test: CSV, plot, "
                                     "suggestion (model and optimizer restored)");
  cmd->add_option("--config", args->config, "YAML config file")->required();
  cmd->add_option("--set", args->sets, "override a config key (key=value); repeatable");
  cmd->add_option("--out", args->out,
                  "directory for lr_find.csv and lr_find.png "
                  "(default: <out_dir>/<name>-lr_find)");
  cmd->add_option("--steps", args->steps, "steps of the sweep (fastai: 100)")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "print one JSON document on stdout");
  cmd->callback([args, exit_code] {
    run_lr_find(*args);
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
