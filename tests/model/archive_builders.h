// Building blocks for tests that craft torch.save archives and pickles by hand (hostile inputs
// are generated at run time; none are shipped), and for running the CLI on them under a memory
// cap while measuring its peak RSS.
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "formats/zip_archive.h"
#include "support/test_support.h"

namespace ltfit::testing {

inline std::string le_bytes(std::uint64_t v, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
  return out;
}

// Pickle opcodes (protocol 2), for composing pickles by hand.
namespace op {
inline const std::string kProto2 = std::string("\x80\x02", 2);
inline std::string global(std::string_view module, std::string_view name) {
  return "c" + std::string(module) + "\n" + std::string(name) + "\n";
}
inline std::string str(std::string_view s) { return "X" + le_bytes(s.size(), 4) + std::string(s); }
inline std::string int32(std::int32_t v) { return "J" + le_bytes(std::uint32_t(v), 4); }
inline std::string put(std::uint8_t i) { return std::string("q") + char(i); }
inline std::string get(std::uint8_t i) { return std::string("h") + char(i); }
// torch._utils._rebuild_tensor_v2(storage(key, FloatStorage, numel), offset, size, stride, ...)
inline std::string float_tensor(const std::string& key, std::int64_t numel, std::int64_t offset,
                                const std::vector<std::int64_t>& size,
                                const std::vector<std::int64_t>& stride) {
  std::string p = global("torch._utils", "_rebuild_tensor_v2") + "((" + str("storage") +
                  global("torch", "FloatStorage") + str(key) + str("cpu") +
                  int32(std::int32_t(numel)) + "tQ" + int32(std::int32_t(offset)) + "(";
  for (std::int64_t s : size) p += "\x8a\x08" + le_bytes(std::uint64_t(s), 8);  // LONG1
  p += "t(";
  for (std::int64_t s : stride) p += "\x8a\x08" + le_bytes(std::uint64_t(s), 8);
  p += "t\x89" + global("collections", "OrderedDict") + ")RtR";
  return p;
}
// An OrderedDict holding `entries` (name, pickled value), as torch.save writes a state dict.
inline std::string state_dict(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string p = kProto2 + global("collections", "OrderedDict") + ")R(";
  for (const auto& [name, value] : entries) p += str(name) + value;
  return p + "u.";
}
}  // namespace op

// A torch.save-style zip: `archive/data.pkl` (deflated if asked) and `archive/<name>` records.
inline std::string torch_zip(std::string_view pkl,
                             const std::vector<std::pair<std::string, std::string>>& records = {},
                             bool deflate_pickle = false) {
  zip::StringSink sink;
  zip::ZipWriter writer(sink);
  if (deflate_pickle) {
    writer.add_deflated("archive/data.pkl", pkl);
  } else {
    writer.add("archive/data.pkl", pkl);
  }
  for (const auto& [name, data] : records) writer.add("archive/" + name, data);
  writer.add("archive/version", "3\n");
  writer.finish();
  return std::move(sink.str());
}

// Runs a shell command; returns its exit status and its stdout and stderr.
inline std::pair<int, std::string> run_command(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// Writes `cases_json` to a scratch file and runs `python3 SCRIPT FILE`, SCRIPT relative to the
// source tree (the Python oracles of the parity and timm tests): its exit status and output.
inline std::pair<int, std::string> run_python_oracle(const std::string& script,
                                                     const std::string& cases_json) {
  TempDir dir;
  const std::string path = (dir.path() / "cases.json").string();
  write_file(path, cases_json);
  return run_command("python3 " + (source_dir() / script).string() + " " + path);
}

struct CappedRun {
  int exit_code = -1;
  std::string output;
  long peak_rss_kib = -1;  // of the ltfit process, from /usr/bin/time
};

// Runs `ltfit args` with its address space capped at `cap_bytes` (prlimit), CUDA hidden, and
// measures its peak RSS: a regression that allocates gigabytes fails instead of taking the
// machine's memory.
inline CappedRun run_ltfit_capped(const std::string& args, std::uint64_t cap_bytes) {
  TempDir scratch;
  const std::string rss = (scratch.path() / "rss").string();
  const CommandResult r = run_ltfit(args, "CUDA_VISIBLE_DEVICES= /usr/bin/time -f %M -o " + rss +
                                              " prlimit --as=" + std::to_string(cap_bytes));
  CappedRun out;
  out.exit_code = r.exit_code;
  out.output = r.output;
  const std::string text = read_file(rss);  // "[Command exited with ...\n]<KiB>\n"
  const std::size_t last = text.find_last_not_of("\n");
  if (last != std::string::npos) {
    const std::size_t start = text.find_last_of('\n', last);
    out.peak_rss_kib = std::stol(text.substr(start == std::string::npos ? 0 : start + 1));
  }
  return out;
}

// Runs `body` in a forked child whose address space may grow by at most `extra_bytes` beyond
// what it has now, and returns the child's exit status (body's return value), or 128 + signal.
// Only for code that does not use LibTorch's thread pools (a forked child must not).
inline int run_in_capped_child(const std::function<int()>& body, std::uint64_t extra_bytes) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    unsigned long pages = 0;
    if (FILE* statm = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(statm, "%lu", &pages) != 1) pages = 0;
      std::fclose(statm);
    }
    const rlim_t cap = rlim_t(pages) * rlim_t(::sysconf(_SC_PAGESIZE)) + extra_bytes;
    const struct rlimit limit = {cap, cap};
    ::setrlimit(RLIMIT_AS, &limit);
    int code = 99;
    try {
      code = body();
    } catch (...) {
      code = 98;
    }
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace ltfit::testing
