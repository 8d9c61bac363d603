// `ltfit convert-checkpoint --trust-code OLD NEW`: rewrites a checkpoint of ltfit's old format
// (TorchScript) in the current data-only format (jobs/convert_checkpoint_job.h). Reading the old
// format runs code stored in the file: only with --trust-code.
#include <CLI/CLI.hpp>

#include "commands.h"
#include "ltfit/jobs/convert_checkpoint_job.h"

namespace ltfit::cli {

void add_convert_checkpoint_command(CLI::App& app, int* exit_code) {
  auto old_path = std::make_shared<std::string>();
  auto new_path = std::make_shared<std::string>();
  auto trust_code = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "convert-checkpoint",
      "rewrite a checkpoint of ltfit's old format (TorchScript) in the data-only format");
  cmd->add_option("old", *old_path, "checkpoint in the old format")->required();
  cmd->add_option("new", *new_path, "checkpoint to write")->required();
  cmd->add_flag("--trust-code", *trust_code,
                "confirm that OLD is yours: reading the old format runs code stored in the file");
  cmd->callback([old_path, new_path, trust_code, exit_code] {
    run_convert_checkpoint_job(*old_path, *new_path, *trust_code);
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
