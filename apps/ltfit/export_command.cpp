// `ltfit export`: a checkpoint's weights as a torch.save state dict for Python, with FILE.json
// beside it saying what it holds (jobs/export_job.h).
#include <CLI/CLI.hpp>

#include "commands.h"
#include "ltfit/jobs/export_job.h"
#include "ltfit/util/signals.h"

namespace ltfit::cli {

void add_export_command(CLI::App& app, int* exit_code) {
  auto checkpoint = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto weights = std::make_shared<std::string>("auto");
  CLI::App* cmd = app.add_subcommand(
      "export",
      "write a checkpoint's weights as a state dict for Python's torch.load, and FILE.json "
      "beside FILE.pth: arch, head, classes, normalization, eval transform (docs/export.md)");
  cmd->add_option("--checkpoint", *checkpoint, "checkpoint file (.ckpt)")->required();
  cmd->add_option("--out", *out, "state dict to write (.pth)")->required();
  cmd->add_option("--weights", *weights,
                  "ema: the moving average of the weights (train.ema); model: the trained "
                  "weights; auto (default): the average when the checkpoint has one");
  cmd->callback([checkpoint, out, weights, exit_code] {
    StopSignals signals(StopMode::kExitNow);  // nothing to save: exit 130, temporaries removed
    run_export_job(*checkpoint, *out, *weights);
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
