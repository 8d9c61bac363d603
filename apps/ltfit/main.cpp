// ltfit's entry point: parse the command line, run one command, map errors to exit codes.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <iostream>

#include "commands.h"
#include "ltfit/util/error.h"
#include "ltfit/util/log.h"

int main(int argc, char** argv) {
  CLI::App app{"ltfit: fine-tune ResNets on image folders the fastai way, in C++ (LibTorch)"};
  app.set_version_flag("--version", std::string("ltfit ") + LTFIT_VERSION);
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "debug-level logging");
  int exit_code = 0;
  ltfit::cli::add_train_command(app, &exit_code);
  ltfit::cli::add_evaluate_command(app, &exit_code);
  ltfit::cli::add_synth_command(app, &exit_code);
  app.parse_complete_callback([&] { ltfit::setup_logging(verbose); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : static_cast<int>(ltfit::ExitCode::kUsage);
  } catch (const ltfit::Error& e) {
    spdlog::error("{}", e.what());
    if (!e.hint().empty()) spdlog::error("HINT: {}", e.hint());
    return static_cast<int>(e.exit_code());
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    return 1;
  }
  return exit_code;
}
