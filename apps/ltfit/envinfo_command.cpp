// `ltfit envinfo`: the machine a run would run on (CPU, RAM, disks, /dev/shm, GPUs in MiB, GB
// and GiB, driver, CUDA, cuDNN, library versions, container), as a table or JSON.
#include <CLI/CLI.hpp>

#include "commands.h"
#include "ltfit/run/envinfo.h"
#include "ltfit/util/standard_output.h"

namespace ltfit::cli {

namespace {

struct EnvinfoArgs {
  bool json = false;
  std::string data_dir;
  std::string run_dir;
};

}  // namespace

void add_envinfo_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<EnvinfoArgs>();
  CLI::App* cmd = app.add_subcommand(
      "envinfo",
      "show the hardware and software this machine offers a run (GPU memory in MiB, "
      "GB and GiB: 11.17 GiB = 12.0 GB)");
  cmd->add_flag("--json", args->json, "print one JSON document on stdout");
  cmd->add_option("--data", args->data_dir, "also report the disk holding this data directory");
  cmd->add_option("--run-dir", args->run_dir, "also report the disk holding this run directory");
  cmd->callback([args, exit_code] {
    const EnvInfo info = collect_envinfo(args->data_dir, args->run_dir);
    write_stdout(args->json ? envinfo_json(info) : envinfo_table(info));
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
