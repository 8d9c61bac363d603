// The CLI's one report of an exception: its message, hint and documented exit code
// (docs/cli.md "Exit codes"), as ltfit::describe_exception maps it (include/ltfit/util/error.h):
// ltfit's own errors carry their code (2 usage/config, 3 data, 4 checkpoint, 5 runtime, 130
// interrupted); out of memory, std::filesystem errors (naming the paths), LibTorch's c10::Error
// and any other exception exit 5. No exception ends the program with an undocumented code
// such as 1.
#pragma once

namespace ltfit::cli {

// Logs the exception being handled (call only inside a catch block) with its hint, and returns
// its exit code.
int report_current_exception();

}  // namespace ltfit::cli
