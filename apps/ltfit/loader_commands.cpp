// `ltfit bench-loader` (input pipeline throughput, no model) and `ltfit show-batch` (a grid of
// augmented training images with their labels): jobs/loader_jobs.h.
#include <spdlog/fmt/fmt.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "commands.h"
#include "ltfit/jobs/loader_jobs.h"
#include "ltfit/util/json.h"
#include "ltfit/util/signals.h"
#include "ltfit/util/standard_output.h"

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
  cmd->add_option("--config", args->config, kConfigHelp)->required();
  cmd->add_option("--set", args->sets, "override a config key (key=value); repeatable");
}

void run_bench_loader(const LoaderArgs& args) {
  const Config config = load_cli_config(args.config, args.sets);
  const BenchLoaderResult r = run_bench_loader_job(config, args.batches, args.workers);
  const double rate = r.images_per_second;
  if (args.json) {
    const nlohmann::json result = {{"images_per_second", rate},
                                   {"images_per_second_per_worker", rate / r.workers},
                                   {"workers", r.workers},
                                   {"available_cores", r.available_cores},
                                   {"images", r.images},
                                   {"seconds", r.seconds},
                                   {"batch_size", config.data.batch_size},
                                   {"image_size", config.data.image_size},
                                   {"skipped_images", r.skipped_images}};
    nlohmann::json out = result;
    out["cache"] = nullptr;
    if (r.cache) {
      out["cache"] = {{"hits", r.cache->hits},
                      {"misses", r.cache->misses},
                      {"images", r.cache->images},
                      {"bytes", r.cache->bytes},
                      {"capacity_bytes", r.cache->capacity},
                      {"not_kept", r.cache->not_kept}};
    }
    write_stdout(dump_json(out) + "\n");
  } else {
    write_stdout(
        fmt::format("{} images in {:.2f} s: {:.1f} images/s, {:.1f} per worker ({} "
                    "workers)\n",
                    r.images, r.seconds, rate, rate / r.workers, r.workers));
  }
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
    StopSignals signals(StopMode::kExitNow);  // nothing to save: exit 130, temporaries removed
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
    StopSignals signals(StopMode::kExitNow);  // nothing to save: exit 130, temporaries removed
    run_show_batch_job(load_cli_config(show->config, show->sets), show->epoch, show->out);
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
