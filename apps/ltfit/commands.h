// The ltfit command-line front end: one registration function per command.
//
// Each `add_*_command` adds a CLI11 subcommand whose callback does the work through the
// library and stores its exit code in `*exit_code`. Errors propagate as ltfit::Error to main's
// single catch, which prints the message and hint and returns the documented exit code.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace ltfit::cli {

void add_train_command(CLI::App& app, int* exit_code);
void add_evaluate_command(CLI::App& app, int* exit_code);
void add_interpret_command(CLI::App& app, int* exit_code);
void add_clean_command(CLI::App& app, int* exit_code);
void add_calibrate_command(CLI::App& app, int* exit_code);
void add_synth_command(CLI::App& app, int* exit_code);
void add_loader_commands(CLI::App& app, int* exit_code);  // bench-loader, show-batch
void add_lr_find_command(CLI::App& app, int* exit_code);
void add_export_command(CLI::App& app, int* exit_code);
void add_predict_command(CLI::App& app, int* exit_code);
void add_experiment_command(CLI::App& app, int* exit_code);  // experiment (plan + report)
void add_envinfo_command(CLI::App& app, int* exit_code);
void add_find_batch_command(CLI::App& app, int* exit_code);
void add_convert_checkpoint_command(CLI::App& app, int* exit_code);
void add_configs_command(CLI::App& app, int* exit_code);  // configs (list, print)
void add_models_command(CLI::App& app, int* exit_code);   // models (the arch registry)
void add_serve_command(CLI::App& app, int* exit_code);    // serve (HTTP)

}  // namespace ltfit::cli
