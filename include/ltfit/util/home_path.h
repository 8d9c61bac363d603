// A leading `~` in a path, as a shell expands it: `~` and `~/x` are the user's home folder
// ($HOME, else the password database's), `~name/x` is that user's. Config keys that hold paths
// use it, since `--set data.root=~/images` reaches ltfit unexpanded (the shell expands `~` only
// at the start of a word or of an assignment). Thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace ltfit {

// `path` with a leading `~` or `~name` expanded; unchanged when it has none, or when the user is
// unknown (the path is then reported missing where it is used, as written).
std::string expand_home(std::string_view path);

}  // namespace ltfit
