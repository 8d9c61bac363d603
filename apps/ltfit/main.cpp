// ltfit's entry point: parse the command line, run one command, map errors to exit codes.
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <iostream>

#include "commands.h"
#include "exit_codes.h"
#include "ltfit/util/choices.h"
#include "ltfit/util/cuda_half.h"
#include "ltfit/util/error.h"
#include "ltfit/util/log.h"
#include "ltfit/util/standard_output.h"

namespace {

// How LibTorch's OpenMP threads wait between parallel regions. libgomp's default spins for
// 300,000 rounds: alone on two cores that is fine, but two trainings sharing the cores ran 7x
// slower (the quickstart: 11.8 img/s each, against 82 with passive waiting). Passive waiting
// (sleep at once) costs a wake-up at every region instead: 12 % of the quickstart's speed alone
// (134.7 img/s against 152.6). A short spin, GOMP_SPINCOUNT=10000 (some microseconds), keeps
// nearly all of the spinning speed alone (152.6) and loses 21 % when two share the cores
// (64-66 img/s each). libgomp reads these once, when it loads, so they are set here and the
// program re-executes itself; a user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT is left alone
// (OMP_WAIT_POLICY=PASSIVE for several jobs on the same cores).
void ensure_short_openmp_spin(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) {
    return;
  }
  ::setenv("GOMP_SPINCOUNT", "10000", /*overwrite=*/0);
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
           "\nHINT: the commands are " + ltfit::join(names) + " (ltfit --help says what each does)";
  }
  return "";
}

// A closed stdin, stdout or stderr (`2>&-`) would hand its number to the next file opened (the
// run's .lock, epochs.csv), and logs or JSON would then be written into it: each closed one of
// 0-2 gets /dev/null first, before anything else opens a file.
void reserve_standard_descriptors() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    const int opened = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);  // the lowest free: fd
    if (opened > 2) ::close(opened);
  }
}

// A file-size limit (ulimit -f) signals SIGXFSZ, whose default action kills the process with
// nothing said and a temporary file left; ignored, the write fails with EFBIG instead and is
// handled as a full disk (exit 5, the previous checkpoint kept).
void ignore_file_size_signal() { std::signal(SIGXFSZ, SIG_IGN); }

// Whatever stdout still buffers, written now: a failure is exit 5, not a silent 0.
int with_stdout_flushed(int exit_code) {
  try {
    ltfit::flush_stdout();
  } catch (...) {
    const int code = ltfit::cli::report_current_exception();
    return exit_code == 0 ? code : exit_code;
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  reserve_standard_descriptors();
  ignore_file_size_signal();
  ensure_short_openmp_spin(argv);
  // Before anything asks LibTorch about CUDA: LibTorch keeps the hooks it found first.
  ltfit::load_cuda_half();
  CLI::App app{
      "ltfit: fine-tune pretrained CNNs (ResNet, ConvNeXt, EfficientNet) on image folders the "
      "fastai way, in C++ (LibTorch)"};
  app.set_version_flag("--version", std::string("ltfit ") + LTFIT_VERSION);
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "debug-level logging");
  int exit_code = 0;
  ltfit::cli::add_train_command(app, &exit_code);
  ltfit::cli::add_evaluate_command(app, &exit_code);
  ltfit::cli::add_interpret_command(app, &exit_code);
  ltfit::cli::add_clean_command(app, &exit_code);
  ltfit::cli::add_calibrate_command(app, &exit_code);
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
  ltfit::cli::add_serve_command(app, &exit_code);
  app.parse_complete_callback([&] { ltfit::setup_logging(verbose); });
  if (const std::string unknown = unknown_command_message(app, argc, argv); !unknown.empty()) {
    std::cerr << unknown << std::endl;
    return static_cast<int>(ltfit::ExitCode::kUsage);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return with_stdout_flushed(code == 0 ? 0 : static_cast<int>(ltfit::ExitCode::kUsage));
  } catch (...) {
    return ltfit::cli::report_current_exception();  // a documented code, never 1
  }
  return with_stdout_flushed(exit_code);
}
