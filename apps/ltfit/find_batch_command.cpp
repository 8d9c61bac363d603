// `ltfit find-batch`: the largest batch a config trains with on its device, found by doubling
// then bisection, each trial two real training steps (jobs/find_batch_job.h).
#include <spdlog/fmt/fmt.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "commands.h"
#include "ltfit/jobs/find_batch_job.h"
#include "ltfit/util/json.h"
#include "ltfit/util/signals.h"
#include "ltfit/util/standard_output.h"

namespace ltfit::cli {

namespace {

constexpr const char* kStudyContext =
    "the 2019 study found 256 at the limit of an 11.17 GiB K80 (ResNet-34, 224 px, fp32)";

// The study's figure is context only for the study's own setting (ResNet-34 at 224 px, fp32).
bool study_comparable(const Config& config) {
  return config.model.arch == "resnet34" && config.data.image_size == 224 &&
         config.train.precision == Precision::kFp32;
}

struct FindBatchArgs {
  std::string config;
  std::vector<std::string> sets;
  FindBatchJobOptions job;
  bool json = false;
};

nlohmann::json trials_json(const FindBatchReport& report) {
  nlohmann::json trials = nlohmann::json::array();
  for (const auto& t : report.search.trials) {
    const TrialMemory& m = report.memory.at(t.batch);
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
  const FindBatchReport r = run_find_batch_job(config, args.job);
  if (args.json) {
    const nlohmann::json result = {
        {"largest_batch", r.search.largest},
        {"device", r.device},
        {"arch", config.model.arch},
        {"image_size", config.data.image_size},
        {"precision", precision_name(config.train.precision)},
        {"channels_last", config.train.channels_last},
        {"start", args.job.start},
        {"max", r.max},
        {"cpu_memory_budget_bytes",
         r.cuda ? nlohmann::json(nullptr) : nlohmann::json(r.cpu_budget_bytes)},
        {"memory_is_estimate", !r.cuda},
        {"trials", trials_json(r)},
        {"classes", r.classes},
        {"study_context",
         study_comparable(config) ? nlohmann::json(kStudyContext) : nlohmann::json(nullptr)}};
    write_stdout(dump_json(result) + "\n");
    return;
  }
  write_stdout(fmt::format("largest batch that trains: {}{} ({} at {} px, {}, {}; {} trials)\n",
                           r.search.largest, r.search.largest == r.max ? " (the --max limit)" : "",
                           config.model.arch, config.data.image_size,
                           precision_name(config.train.precision), r.device,
                           r.search.trials.size()));
  if (study_comparable(config)) write_stdout(fmt::format("for context: {}\n", kStudyContext));
}

}  // namespace

void add_find_batch_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<FindBatchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "find-batch",
      "find the largest batch size that trains without running out of memory: doubling then "
      "bisection, each trial two real training steps on random input. On CPU the limit is an "
      "estimate: a trial fails when its resident memory growth passes --memory-budget");
  cmd->add_option("--config", args->config, kConfigHelp)->required();
  cmd->add_option("--set", args->sets, "override a config key (key=value); repeatable");
  cmd->add_option("--start", args->job.start,
                  "first batch size tried (at least 2: BatchNorm cannot train on one image)")
      ->capture_default_str()
      ->check(CLI::Range(2, 1 << 20));
  cmd->add_option("--max", args->job.max,
                  "largest batch size tried (default: 1024 on GPU, 256 on CPU)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--memory-budget", args->job.budget_mib,
                  "CPU only: memory a trial may add, in MiB (default: 80 % of MemAvailable); "
                  "CPU results are estimates from resident memory")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", args->json, "print one JSON document on stdout");
  cmd->callback([args, exit_code] {
    StopSignals signals(StopMode::kExitNow);  // nothing to save: exit 130, temporaries removed
    run_find_batch(*args);
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
