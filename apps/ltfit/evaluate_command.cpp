// `ltfit evaluate`: reload a checkpoint and report loss and accuracy on a dataset.
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>

#include "commands.h"
#include "ltfit/config/config_loader.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/data/loader.h"
#include "ltfit/eval/evaluator.h"
#include "ltfit/model/resnet.h"
#include "ltfit/train/checkpoint.h"
#include "ltfit/util/device.h"

namespace ltfit::cli {

namespace {

struct EvaluateArgs {
  std::string checkpoint;
  std::string data;
  std::string device = "auto";
  bool json = false;
};

void print_table(const EvalResult& r, const std::vector<std::string>& classes) {
  std::printf("%-12s %10s %10s %10s %8s %8s\n", "split", "images", "loss", "accuracy", "error",
              "seconds");
  std::printf("%-12s %10lld %10.6f %10.6f %8.6f %8.2f\n", "valid", static_cast<long long>(r.count),
              r.loss, r.accuracy, 1.0 - r.accuracy, r.seconds);
  std::printf("\nconfusion matrix (rows: actual, columns: predicted)\n%-12s", "");
  for (const auto& c : classes) std::printf(" %8s", c.c_str());
  std::printf("\n");
  for (std::size_t i = 0; i < classes.size(); ++i) {
    std::printf("%-12s", classes[i].c_str());
    for (std::size_t j = 0; j < classes.size(); ++j) {
      std::printf(
          " %8lld",
          static_cast<long long>(
              r.confusion[static_cast<long>(i)][static_cast<long>(j)].item<std::int64_t>()));
    }
    std::printf("\n");
  }
}

nlohmann::json to_json(const EvalResult& r, const std::vector<std::string>& classes,
                       const std::string& checkpoint) {
  std::vector<std::vector<std::int64_t>> confusion;
  for (std::int64_t i = 0; i < r.confusion.size(0); ++i) {
    confusion.emplace_back();
    for (std::int64_t j = 0; j < r.confusion.size(1); ++j) {
      confusion.back().push_back(r.confusion[i][j].item<std::int64_t>());
    }
  }
  return {{"checkpoint", checkpoint}, {"classes", classes},     {"images", r.count},
          {"loss", r.loss},           {"accuracy", r.accuracy}, {"error_rate", 1.0 - r.accuracy},
          {"seconds", r.seconds},     {"confusion", confusion}};
}

void run_evaluate(const EvaluateArgs& args) {
  const CheckpointMeta meta = read_checkpoint_meta(args.checkpoint);
  const Config config = load_config_from_string(meta.config_yaml, args.checkpoint + " (config)");
  ResNet model(resnet_spec(config.model.arch), static_cast<std::int64_t>(meta.classes.size()),
               parse_head_kind(config.model.head), config.model.dropout);
  load_checkpoint(args.checkpoint, model, nullptr);
  const torch::Device device = resolve_device(args.device, "--device");
  model->to(device);
  std::vector<Sample> samples = args.data.empty()
                                    ? index_dataset(config.data, config.run.seed).valid
                                    : index_class_folders(args.data, meta.classes);
  LoaderOptions options;
  options.image_size = config.data.image_size;
  options.batch_size = config.data.batch_size;
  options.workers = config.data.workers;
  Loader loader(std::move(samples), options);
  spdlog::info("evaluating {} ({}) on {} images", args.checkpoint, config.model.arch,
               loader.size());
  const EvalResult result = evaluate(model, loader, {device, false});
  if (args.json) {
    std::cout << to_json(result, meta.classes, args.checkpoint).dump(2) << std::endl;
  } else {
    print_table(result, meta.classes);
  }
}

}  // namespace

void add_evaluate_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<EvaluateArgs>();
  CLI::App* cmd = app.add_subcommand("evaluate", "evaluate a saved checkpoint on a dataset");
  cmd->add_option("--checkpoint", args->checkpoint, "checkpoint file (.ckpt)")->required();
  cmd->add_option("--data", args->data,
                  "folder of <class>/ subfolders (default: the "
                  "validation split of the checkpoint's config)");
  cmd->add_option("--device", args->device, "auto | cpu | cuda | cuda:N")->capture_default_str();
  cmd->add_flag("--json", args->json, "print one JSON document on stdout");
  cmd->callback([args, exit_code] {
    run_evaluate(*args);
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
