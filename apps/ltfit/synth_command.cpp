// `ltfit synth`: write a synthetic image set (jobs/synth_job.h).
#include <CLI/CLI.hpp>

#include "commands.h"
#include "ltfit/jobs/synth_job.h"

namespace ltfit::cli {

void add_synth_command(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<SynthOptions>();
  CLI::App* cmd = app.add_subcommand(
      "synth",
      "write a synthetic JPEG image set: two classes (cat/dog, or bear/rabbit) shaped like the "
      "real one, or multi-label shapes");
  cmd->add_option("--out", options->out_dir, "destination directory")->required();
  cmd->add_option("--train", options->train, "training images (both classes)")
      ->capture_default_str();
  cmd->add_option("--valid", options->valid, "validation images (both classes)")
      ->capture_default_str();
  cmd->add_option(
         "--layout", options->layout,
         "folders: {train,valid}/<class>/NNNNN.jpg; "
         "kaggle: flat train/<class>.<N>.jpg; "
         "csv: images/NNNNN.jpg with labels.csv (fname,labels,is_valid); "
         "pattern: flat images/<class>_<N>.jpg (kaggle and pattern: one pool, the "
         "validation split is drawn at training time); "
         "cifar10: cifar-10-batches-bin/ (data_batch_1..5.bin, test_batch.bin) and "
         "cifar100: cifar-100-binary/ (train.bin, test.bin), CIFAR's binary records of "
         "32x32 images, each beside its Python version (cifar-10-batches-py/, "
         "cifar-100-python/: the pickles torchvision downloads); shards: train-000000.tar, ... and "
         "valid-000000.tar, ... as WebDataset writes them (NNNNNN.jpg with NNNNNN.cls) "
         "and classes.txt")
      ->capture_default_str()
      ->check(
          CLI::IsMember({"folders", "kaggle", "csv", "pattern", "cifar10", "cifar100", "shards"}));
  cmd->add_option("--task", options->task,
                  "cats_dogs: classes cat, dog; bears_rabbits: classes bear, rabbit (same faces, "
                  "other ears; a second task for transfer-learning checks); shapes: multi-label, "
                  "each image holds any of circle, square, triangle, star (needs --layout csv)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cats_dogs", "bears_rabbits", "shapes"}));
  cmd->add_option("--seed", options->seed, "random seed (same seed, same files)")
      ->capture_default_str();
  cmd->add_option("--quality", options->jpeg_quality, "JPEG quality 0-100")->capture_default_str();
  cmd->callback([options, exit_code] {
    run_synth_job(*options);
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
