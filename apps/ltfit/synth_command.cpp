// `ltfit synth`: write the synthetic two-class image set (jobs/synth_job.h).
#include <CLI/CLI.hpp>

#include "commands.h"
#include "ltfit/jobs/synth_job.h"

namespace ltfit::cli {

void add_synth_command(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<SynthOptions>();
  CLI::App* cmd = app.add_subcommand("synth",
                                     "write a synthetic two-class JPEG image set (cat/dog, or "
                                     "bear/rabbit) shaped like the real one");
  cmd->add_option("--out", options->out_dir, "destination directory")->required();
  cmd->add_option("--train", options->train, "training images (both classes)")
      ->capture_default_str();
  cmd->add_option("--valid", options->valid, "validation images (both classes)")
      ->capture_default_str();
  cmd->add_option("--layout", options->layout,
                  "folders: {train,valid}/{cat,dog}/; "
                  "kaggle: flat train/cat.N.jpg")
      ->capture_default_str()
      ->check(CLI::IsMember({"folders", "kaggle"}));
  cmd->add_option("--task", options->task,
                  "cats_dogs: classes cat, dog; bears_rabbits: classes bear, rabbit (same faces, "
                  "other ears; a second task for transfer-learning checks)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cats_dogs", "bears_rabbits"}));
  cmd->add_option("--seed", options->seed, "random seed (same seed, same files)")
      ->capture_default_str();
  cmd->add_option("--quality", options->jpeg_quality, "JPEG quality 0-100")->capture_default_str();
  cmd->callback([options, exit_code] {
    run_synth_job(*options);
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
