// A config found by path or by name, plus --set overrides: see command_config.h.
#include "ltfit/jobs/command_config.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <system_error>

#include "ltfit/data/csv_sidecar.h"
#include "ltfit/jobs/shipped_configs.h"
#include "ltfit/util/choices.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace fs = std::filesystem;

namespace {

#ifndef LTFIT_INSTALL_DATADIR
#define LTFIT_INSTALL_DATADIR "share"  // CMake's GNUInstallDirs default
#endif

constexpr std::size_t kMaxDescriptionBytes = 200;

// The running binary's installed configs: <exe>/../<datadir>/ltfit/configs; empty if unknown.
fs::path running_binary() {
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  return error ? fs::path() : exe;
}

fs::path installed_config_dir(const fs::path& exe) {
  const fs::path datadir(LTFIT_INSTALL_DATADIR);
  const fs::path prefix = exe.parent_path().parent_path();
  return (datadir.is_absolute() ? datadir : prefix / datadir) / "ltfit" / "configs";
}

// A binary run from its CMake build folder: the source checkout's configs/, named by the
// folder's CMakeCache.txt (CMAKE_HOME_DIRECTORY); empty for an installed binary.
fs::path build_tree_config_dir(const fs::path& exe) {
  std::ifstream cache(exe.parent_path() / "CMakeCache.txt");
  const std::string key = "CMAKE_HOME_DIRECTORY:INTERNAL=";
  std::string line;
  for (int i = 0; i < 5000 && std::getline(cache, line); ++i) {
    if (line.rfind(key, 0) == 0) return fs::path(line.substr(key.size())) / "configs";
  }
  return {};
}

bool is_file(const fs::path& path) {
  std::error_code error;
  return fs::is_regular_file(path, error);
}

bool same_folder(const fs::path& a, const fs::path& b) {
  std::error_code error;
  return fs::equivalent(a, b, error);
}

// Whether the YAML file `path` has a line `key:` at column 0 (a plan has `base:`).
bool has_top_level_key(const fs::path& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  for (int i = 0; i < 2000 && std::getline(in, line); ++i) {
    if (line.rfind(key + ":", 0) == 0) return true;
  }
  return false;
}

// The first line of `path` that starts with '#', without the '#' and surrounding blanks; only
// leading comment lines count (the first key ends the search). Empty if there is none.
std::string first_comment_line(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  for (int i = 0; i < 20 && std::getline(in, line); ++i) {
    const auto start = line.find_first_not_of(" \t");
    if (start == std::string::npos) continue;
    if (line[start] != '#') return {};
    std::string text = line.substr(start + 1);
    text.erase(0, text.find_first_not_of(" \t"));
    text.erase(text.find_last_not_of(" \t\r") + 1);
    if (text.size() > kMaxDescriptionBytes) text = text.substr(0, kMaxDescriptionBytes) + "...";
    return text;
  }
  return {};
}

// The search folder for `kind`: `dir` for configs, its experiments/ subfolder for plans.
fs::path kind_dir(const fs::path& dir, const std::string& kind) {
  return kind == "plan" ? dir / kPlanFolder : dir;
}

std::string known_names(const std::string& kind) {
  std::string names;
  for (const ConfigEntry& entry : list_configs(kind))
    names += (names.empty() ? "" : ", ") + entry.name;
  return names.empty() ? "none found" : names;
}

}  // namespace

std::vector<Override> parse_cli_overrides(const std::vector<std::string>& sets) {
  std::vector<Override> overrides;
  for (const auto& s : sets) overrides.push_back(parse_override(s));
  return overrides;
}

std::vector<fs::path> config_search_dirs() {
  // The binary's own folders do not change while it runs: found (and CMakeCache.txt read) once.
  static const std::vector<fs::path> binary_dirs = [] {
    const fs::path exe = running_binary();
    if (exe.empty()) return std::vector<fs::path>{};
    return std::vector<fs::path>{installed_config_dir(exe), build_tree_config_dir(exe)};
  }();
  std::vector<fs::path> dirs{fs::path("configs")};
  std::vector<fs::path> candidates = binary_dirs;
  candidates.push_back(shipped_config_dir());  // last: what this binary was built with
  for (const fs::path& dir : candidates) {
    std::error_code error;
    if (dir.empty() || !fs::is_directory(dir, error)) continue;
    const bool seen = std::any_of(dirs.begin(), dirs.end(),
                                  [&](const fs::path& d) { return same_folder(d, dir); });
    if (!seen) dirs.push_back(dir);
  }
  return dirs;
}

fs::path resolve_config_path(const std::string& name, const std::string& kind,
                             const std::string& asked_as) {
  const std::string option = !asked_as.empty() ? asked_as : kind == "plan" ? "--plan" : "--config";
  if (name.empty()) throw ConfigError(option + ": expected a " + kind + " file or name, got ''");
  const fs::path given(name);
  std::error_code error;
  if (fs::exists(given, error)) return given;  // as given: read_input_file says what is wrong
  if (given.is_relative()) {
    for (const fs::path& dir : config_search_dirs()) {
      const fs::path folder = kind_dir(dir, kind);
      for (const fs::path& candidate : {folder / given, folder / (name + ".yaml")}) {
        if (is_file(candidate)) return candidate;
      }
    }
  }
  std::string searched;
  for (const fs::path& dir : config_search_dirs())
    searched += (searched.empty() ? "" : ", ") + kind_dir(dir, kind).string() + "/";
  std::vector<std::string> names;
  for (const ConfigEntry& entry : list_configs(kind)) names.push_back(entry.name);
  const std::string suggestion = closest(given.stem().string(), names);
  throw ConfigError(option + " " + name + ": no such file, and no " + kind + " of that name in " +
                        searched + " (shipped " + kind + "s: " + known_names(kind) + ")",
                    (suggestion.empty() ? "" : "did you mean '" + suggestion + "'? ") +
                        "pass a YAML file's path, or a name that `ltfit configs` lists");
}

std::vector<ConfigEntry> list_configs(const std::string& kind) {
  std::vector<ConfigEntry> entries;
  for (const fs::path& base : config_search_dirs()) {
    const fs::path dir = kind_dir(base, kind);
    std::error_code error;
    fs::directory_iterator it(dir, error);
    if (error) continue;
    for (const fs::directory_entry& file : it) {
      const fs::path path = file.path();
      if (path.extension() != ".yaml" || !is_file(path)) continue;
      if (kind == "plan" && !has_top_level_key(path, "base")) continue;  // e.g. a study's figures
      const std::string name = path.stem().string();
      const bool hidden = std::any_of(entries.begin(), entries.end(),
                                      [&](const ConfigEntry& e) { return e.name == name; });
      if (!hidden) entries.push_back({name, path, first_comment_line(path)});
    }
  }
  std::sort(entries.begin(), entries.end(),
            [](const ConfigEntry& a, const ConfigEntry& b) { return a.name < b.name; });
  return entries;
}

Config load_cli_config(const std::string& name, const std::vector<std::string>& sets) {
  const fs::path path = resolve_config_path(name);
  std::error_code error;
  const fs::path absolute = fs::absolute(path, error);
  spdlog::info("config {}: {}", name, (error ? path : absolute.lexically_normal()).string());
  Config config = load_config(path.string(), parse_cli_overrides(sets));
  const std::string sidecar = apply_csv_sidecar(config);
  if (!sidecar.empty()) {
    spdlog::info("{}", sidecar);
    validate(config);  // the task is now multi-label: its rules again
  }
  for (const std::string& warning : config_warnings(config)) spdlog::warn("{}", warning);
  return config;
}

}  // namespace ltfit
