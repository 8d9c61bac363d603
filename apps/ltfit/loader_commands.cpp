// `ltfit bench-loader` (input pipeline throughput, no model) and `ltfit show-batch` (a grid of
// augmented training images with their labels).
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <iostream>

#include "cli_common.h"
#include "commands.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/data/image_grid.h"
#include "ltfit/data/loader.h"
#include "ltfit/util/error.h"
#include "ltfit/util/json.h"

namespace ltfit::cli {

namespace {

struct LoaderArgs {
  std::string config;
  std::vector<std::string> sets;
  int batches = 50;
  int workers = 0;
  bool json = false;
  std::string out;
  int epoch = 0;
};

void add_config_options(CLI::App* cmd, LoaderArgs* args) {
  cmd->add_option("--config", args->config, "YAML config file")->required();
  cmd->add_option("--set", args->sets, "override a config key (key=value); repeatable");
}

// Pulls `count` batches from `loader`, starting new epochs as needed; returns images seen.
std::int64_t pull_batches(Loader& loader, int count, int* epoch) {
  std::int64_t images = 0;
  for (int i = 0; i < count; ++i) {
    auto batch = loader.next();
    if (!batch) {
      loader.start_epoch(++*epoch);
      batch = loader.next();
      if (!batch) break;
    }
    images += batch->labels.size(0);
  }
  return images;
}

void run_bench_loader(const LoaderArgs& args) {
  Config config = load_cli_config(args.config, args.sets);
  if (args.workers > 0) config.data.workers = args.workers;
  const DatasetIndex index = index_dataset(config.data, config.run.seed);
  Loader loader(index.train, make_loader_options(config, /*train=*/true));
  const int warmup = 2 * loader.workers();
  int epoch = 0;
  loader.start_epoch(epoch);
  spdlog::info("bench-loader: {} images, {} worker(s), batch {} at {} px; {} warm-up + {} batches",
               loader.size(), loader.workers(), config.data.batch_size, config.data.image_size,
               warmup, args.batches);
  pull_batches(loader, warmup, &epoch);
  const auto start = std::chrono::steady_clock::now();
  const std::int64_t images = pull_batches(loader, args.batches, &epoch);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double rate = static_cast<double>(images) / seconds;
  const nlohmann::json result = {{"images_per_second", rate},
                                 {"images_per_second_per_worker", rate / loader.workers()},
                                 {"workers", loader.workers()},
                                 {"available_cores", available_cores()},
                                 {"images", images},
                                 {"seconds", seconds},
                                 {"batch_size", config.data.batch_size},
                                 {"image_size", config.data.image_size},
                                 {"skipped_images", loader.skipped().count}};
  if (args.json) {
    std::cout << dump_json(result) << std::endl;
  } else {
    std::printf("%lld images in %.2f s: %.1f images/s, %.1f per worker (%d workers)\n",
                static_cast<long long>(images), seconds, rate, rate / loader.workers(),
                loader.workers());
  }
}

void run_show_batch(const LoaderArgs& args) {
  const Config config = load_cli_config(args.config, args.sets);
  const DatasetIndex index = index_dataset(config.data, config.run.seed);
  Loader loader(index.train, make_loader_options(config, /*train=*/true));
  loader.start_epoch(args.epoch);
  const auto batch = loader.next();
  if (!batch) throw DataError("no readable training image for a batch");
  std::vector<std::string> captions;
  for (std::int64_t i = 0; i < batch->labels.size(0); ++i) {
    captions.push_back(
        index.classes[static_cast<std::size_t>(batch->labels[i].item<std::int64_t>())]);
  }
  write_image_grid(batch->images, captions, 0, args.out);
  spdlog::info("wrote {} augmented training images (epoch {}) to {}", captions.size(), args.epoch,
               args.out);
}

}  // namespace

void add_loader_commands(CLI::App& app, int* exit_code) {
  auto bench = std::make_shared<LoaderArgs>();
  CLI::App* cmd = app.add_subcommand(
      "bench-loader", "measure the input pipeline alone (decode + augment + batch), images/s");
  add_config_options(cmd, bench.get());
  cmd->add_option("--batches", bench->batches, "batches to time after the warm-up")
      ->capture_default_str();
  cmd->add_option("--workers", bench->workers, "loader threads (default: data.workers)");
  cmd->add_flag("--json", bench->json, "print one JSON document on stdout");
  cmd->callback([bench, exit_code] {
    run_bench_loader(*bench);
    *exit_code = 0;
  });

  auto show = std::make_shared<LoaderArgs>();
  CLI::App* show_cmd = app.add_subcommand(
      "show-batch", "write a PNG grid of one augmented training batch with its labels");
  add_config_options(show_cmd, show.get());
  show_cmd->add_option("--out", show->out, "PNG file to write")->required();
  show_cmd->add_option("--epoch", show->epoch, "epoch whose first batch to show")
      ->capture_default_str();
  show_cmd->callback([show, exit_code] {
    run_show_batch(*show);
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
