// The CLI's one mapping from an exception to a documented exit code (DESIGN.md "Exit codes").
//
// ltfit's own errors carry their code (2 usage/config, 3 data, 4 checkpoint, 5 runtime, 130
// interrupted). Everything else is mapped too, so no exception ever ends the program with an
// undocumented code such as 1:
//   std::filesystem::filesystem_error  5, naming the path(s) (an output that cannot be written)
//   std::bad_alloc, c10::OutOfMemoryError  5 (out of memory)
//   c10::Error (LibTorch), nlohmann::json errors, std::system_error, any other std::exception,
//   or a non-standard exception  5, reported as an internal error with a request to report it
#pragma once

namespace ltfit::cli {

// Logs the exception being handled (call only inside a catch block) with a hint, and returns
// its exit code.
int report_current_exception();

}  // namespace ltfit::cli
