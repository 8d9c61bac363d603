// What train's --config, --set, --run-dir and --resume mean: see resume.h.
#include "ltfit/jobs/resume.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <optional>

#include "ltfit/config/config_loader.h"
#include "ltfit/jobs/command_config.h"
#include "ltfit/train/checkpoint.h"
#include "ltfit/train/checkpoint_writer.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

// A checkpoint carries its run's config: resuming uses it, with the --set overrides on top.
Config checkpoint_config(const std::string& checkpoint, const TrainRequest& request) {
  if (!request.config.empty()) {
    spdlog::info("resuming: the checkpoint's own config is used; --config {} is not read",
                 request.config);
  }
  const CheckpointMeta meta = read_checkpoint_meta(checkpoint);
  return load_config_from_string(meta.config_yaml, checkpoint, parse_cli_overrides(request.sets));
}

// --resume CKPT|auto: config, run directory and checkpoint.
ResolvedTrain resolve_continued(const TrainRequest& request) {
  ResolvedTrain out;
  TrainJobOptions& options = out.options;
  if (!request.run_dir.empty()) options.run_dir = request.run_dir;
  if (request.resume != "auto") {
    options.resume = request.resume;
    out.config = checkpoint_config(request.resume, request);
    return out;
  }
  std::string dir = request.run_dir;
  std::optional<Config> fresh;
  if (dir.empty()) {
    if (request.config.empty())
      throw ConfigError("--resume auto needs --run-dir or --config (to find the run directory)");
    fresh = load_cli_config(request.config, request.sets);
    dir = (std::filesystem::path(fresh->run.out_dir) / fresh->run.name).string();
    options.run_dir = dir;
  }
  if (const auto checkpoint = find_resume_checkpoint(dir)) {
    options.resume = *checkpoint;
    out.config = checkpoint_config(*checkpoint, request);
    return out;
  }
  spdlog::info("--resume auto: no checkpoint in {}, starting the run there", dir);
  options.reuse_run_dir = true;
  if (fresh) {
    out.config = *fresh;
    return out;
  }
  const std::string saved = (std::filesystem::path(dir) / "config.yaml").string();
  if (request.config.empty() && !std::filesystem::exists(saved))
    throw ConfigError("--resume auto: no checkpoint and no config.yaml in " + dir,
                      "pass --config FILE to start the run");
  out.config = load_cli_config(request.config.empty() ? saved : request.config, request.sets);
  return out;
}

}  // namespace

ResolvedTrain resolve_resume(const TrainRequest& request) {
  if (!request.resume.empty()) return resolve_continued(request);
  if (request.config.empty()) throw ConfigError("train: --config FILE is required");
  ResolvedTrain out;
  out.config = load_cli_config(request.config, request.sets);
  if (!request.run_dir.empty()) out.options.run_dir = request.run_dir;
  return out;
}

}  // namespace ltfit
