// `ltfit find-batch`: the largest batch a config trains with on its device, found by doubling
// then bisection, each trial two real training steps (see ltfit/train/batch_finder.h).
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <map>

#include "cli_common.h"
#include "commands.h"
#include "ltfit/train/batch_finder.h"
#include "ltfit/util/device.h"
#include "ltfit/util/json.h"

namespace ltfit::cli {

namespace {

constexpr const char* kStudyContext =
    "the 2019 study found 256 at the limit of an 11.17 GiB K80 (ResNet-34, 224 px, fp32)";
constexpr double kMiB = 1024.0 * 1024.0;

struct FindBatchArgs {
  std::string config;
  std::vector<std::string> sets;
  int start = 2;            // BatchNorm cannot train on a single image
  int max = 0;              // 0: 1024 on GPU, 256 on CPU
  double budget_mib = 0.0;  // 0: 80 % of MemAvailable
  bool json = false;
};

nlohmann::json trials_json(const BatchSearch& search, const std::map<int, TrialMemory>& memory) {
  nlohmann::json trials = nlohmann::json::array();
  for (const auto& t : search.trials) {
    const TrialMemory& m = memory.at(t.batch);
    trials.push_back({{"batch", t.batch},
                      {"fits", t.fits},
                      {"seconds", t.seconds},
                      {"memory_bytes", m.bytes},
                      {"skipped", m.skipped},
                      {"note", m.note}});
  }
  return trials;
}

void run_find_batch(const FindBatchArgs& args) {
  const Config config = load_cli_config(args.config, args.sets);
  const torch::Device device = resolve_device(config.train.device);
  const int max = args.max > 0 ? args.max : (device.is_cuda() ? 1024 : 256);
  BatchFitOptions options;
  options.cpu_budget_bytes = static_cast<std::int64_t>(args.budget_mib * kMiB);
  const std::int64_t budget = cpu_budget_bytes(options);
  spdlog::info("find-batch: {} ({} head) at {} px, {}{}, on {}; batches {}..{}", config.model.arch,
               config.model.head, config.data.image_size, config.train.precision,
               config.train.channels_last ? ", channels_last" : "", describe_device(device),
               args.start, max);
  if (!device.is_cuda()) {
    spdlog::info(
        "CPU: a trial fails when its resident memory growth passes {:.0f} MiB "
        "(an estimate; a real CPU out-of-memory kills the process)",
        static_cast<double>(budget) / kMiB);
  }
  std::map<int, TrialMemory> memory;
  const auto report = [&](int batch, const TrialMemory& m, double seconds) {
    memory[batch] = m;
    spdlog::info("batch {:>5}: {:<4} {:7.2f} s  {:9.1f} MiB{}{}", batch, m.fits ? "fits" : "no",
                 seconds, static_cast<double>(m.bytes) / kMiB, m.note.empty() ? "" : "  ", m.note);
  };
  const BatchSearch search =
      find_largest_batch(make_trial_predicate(config, device, options, report), args.start, max);
  if (args.json) {
    const nlohmann::json result = {
        {"largest_batch", search.largest},
        {"device", describe_device(device)},
        {"arch", config.model.arch},
        {"image_size", config.data.image_size},
        {"precision", config.train.precision},
        {"channels_last", config.train.channels_last},
        {"start", args.start},
        {"max", max},
        {"cpu_memory_budget_bytes",
         device.is_cuda() ? nlohmann::json(nullptr) : nlohmann::json(budget)},
        {"memory_is_estimate", !device.is_cuda()},
        {"trials", trials_json(search, memory)},
        {"study_context", kStudyContext}};
    std::cout << dump_json(result) << std::endl;
    return;
  }
  std::printf("largest batch that trains: %d%s (%s at %d px, %s, %s; %zu trials)\n", search.largest,
              search.largest == max ? " (the --max limit)" : "", config.model.arch.c_str(),
              config.data.image_size, config.train.precision.c_str(),
              describe_device(device).c_str(), search.trials.size());
  std::printf("for context: %s\n", kStudyContext);
}

}  // namespace

void add_find_batch_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<FindBatchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "find-batch",
      "find the largest batch size that trains without running out of memory: doubling then "
      "bisection, each trial two real training steps on random input. On CPU the limit is an "
      "estimate: a trial fails when its resident memory growth passes --memory-budget");
  cmd->add_option("--config", args->config, "YAML config file")->required();
  cmd->add_option("--set", args->sets, "override a config key (key=value); repeatable");
  cmd->add_option("--start", args->start,
                  "first batch size tried (at least 2: BatchNorm cannot train on one image)")
      ->capture_default_str()
      ->check(CLI::Range(2, 1 << 20));
  cmd->add_option("--max", args->max, "largest batch size tried (default: 1024 on GPU, 256 on CPU)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--memory-budget", args->budget_mib,
                  "CPU only: memory a trial may add, in MiB (default: 80 % of MemAvailable); "
                  "CPU results are estimates from resident memory")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", args->json, "print one JSON document on stdout");
  cmd->callback([args, exit_code] {
    run_find_batch(*args);
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
