// ltfit's entry point: parse the command line, run one command, map errors to exit codes.
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "commands.h"
#include "exit_codes.h"
#include "ltfit/util/choices.h"
#include "ltfit/util/error.h"
#include "ltfit/util/log.h"

namespace {

// LibTorch's OpenMP threads spin while waiting for work by default. The loader's decode threads
// (and anything else on the machine) then fight spinning threads for the cores, and training
// slows down several-fold. OpenMP reads OMP_WAIT_POLICY once, when the library loads, so it is
// set here and the program re-executes itself; a user's own setting is left alone.
void ensure_passive_openmp(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  ::setenv("OMP_WAIT_POLICY", "PASSIVE", /*overwrite=*/0);
  ::execv("/proc/self/exe", argv);  // returns only on failure: then run as we are
}

// The command the user meant when argv's first word is no command: CLI11 would only say "A
// subcommand is required" (or that the word was not expected). Returns the message, or "" when
// the first word is a command or there is none (no option of ltfit's own takes a value, so the
// first word that is not an option names the command).
std::string unknown_command_message(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (!word.empty() && word[0] == '-') continue;
    if (std::find(names.begin(), names.end(), word) != names.end()) return "";
    const std::string suggestion = ltfit::closest(word, names);
    return "ltfit: '" + word + "' is not a command" +
           (suggestion.empty() ? "" : "; did you mean '" + suggestion + "'?") +
           "\nHINT: the commands are " + ltfit::join(names) +
           " (ltfit --help says what each does)";
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  ensure_passive_openmp(argv);
  CLI::App app{"ltfit: fine-tune pretrained CNNs (ResNet, ConvNeXt, EfficientNet) on image folders the fastai way, in C++ (LibTorch)"};
  app.set_version_flag("--version", std::string("ltfit ") + LTFIT_VERSION);
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "debug-level logging");
  int exit_code = 0;
  ltfit::cli::add_train_command(app, &exit_code);
  ltfit::cli::add_evaluate_command(app, &exit_code);
  ltfit::cli::add_synth_command(app, &exit_code);
  ltfit::cli::add_loader_commands(app, &exit_code);
  ltfit::cli::add_lr_find_command(app, &exit_code);
  ltfit::cli::add_export_command(app, &exit_code);
  ltfit::cli::add_predict_command(app, &exit_code);
  ltfit::cli::add_experiment_command(app, &exit_code);
  ltfit::cli::add_envinfo_command(app, &exit_code);
  ltfit::cli::add_find_batch_command(app, &exit_code);
  ltfit::cli::add_convert_checkpoint_command(app, &exit_code);
  ltfit::cli::add_configs_command(app, &exit_code);
  ltfit::cli::add_models_command(app, &exit_code);
  app.parse_complete_callback([&] { ltfit::setup_logging(verbose); });
  if (const std::string unknown = unknown_command_message(app, argc, argv); !unknown.empty()) {
    std::cerr << unknown << std::endl;
    return static_cast<int>(ltfit::ExitCode::kUsage);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : static_cast<int>(ltfit::ExitCode::kUsage);
  } catch (...) {
    return ltfit::cli::report_current_exception();  // a documented code, never 1
  }
  return exit_code;
}
