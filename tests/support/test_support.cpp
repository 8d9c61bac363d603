#include "support/test_support.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ltfit/data/synth.h"

#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace ltfit::testing {

namespace fs = std::filesystem;

TempDir::TempDir() {
  std::random_device rd;
  for (int attempt = 0; attempt < 100; ++attempt) {
    fs::path candidate = fs::temp_directory_path() / ("ltfit-test-" + std::to_string(rd()));
    if (fs::create_directory(candidate)) {
      path_ = candidate;
      return;
    }
  }
  throw std::runtime_error("cannot create a temporary directory");
}

TempDir::~TempDir() {
  std::error_code ignored;
  fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ignored);
  fs::remove_all(path_, ignored);
}

static std::string run_and_capture(const std::string& command, int* status) {
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed: " + command);
  std::string text;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) text.append(buffer.data(), n);
  *status = pclose(pipe);
  return text;
}

CommandResult run_ltfit(const std::string& args, const std::string& env) {
  TempDir scratch;
  const fs::path out_file = scratch.path() / "stdout.txt";
  const fs::path err_file = scratch.path() / "stderr.txt";
  const fs::path script = scratch.path() / "run.sh";
  // A script file keeps `args` free of a second level of shell quoting.
  write_file(script, env + " " + std::string(LTFIT_BINARY) + " " + args + " >" + out_file.string() +
                         " 2>" + err_file.string() + " </dev/null\necho $?\n");
  int status = 0;
  const std::string code_text = run_and_capture("bash " + script.string(), &status);
  CommandResult result;
  result.exit_code = std::stoi(code_text);
  result.stdout_text = read_file(out_file);
  result.output = result.stdout_text + read_file(err_file);
  return result;
}

void write_file(const fs::path& path, const std::string& text) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string line_with(const std::string& text, const std::string& needle) {
  std::size_t start = 0;
  for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    std::string line = text.substr(start, end - start);
    if (line.find(needle) != std::string::npos) return line;
  }
  return "";
}

std::vector<ltfit::Sample> write_small_synth(const fs::path& dir, int train, int valid,
                                             int min_side, int max_side, std::uint64_t seed) {
  ltfit::SynthOptions synth;
  synth.out_dir = dir.string();
  synth.train = train;
  synth.valid = valid;
  synth.min_side = min_side;
  synth.max_side = max_side;
  synth.seed = seed;
  ltfit::write_synthetic_dataset(synth);
  ltfit::DataConfig data;
  data.root = dir.string();
  return ltfit::index_dataset(data, 0, false).train;
}

fs::path source_dir() { return fs::path(LTFIT_SOURCE_DIR); }

int threads_named(const std::string& name) {
  int count = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string line;
    if (std::getline(comm, line) && line == name) ++count;
  }
  return count;
}

int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

std::string run_bash(const std::filesystem::path& dir, const std::string& script) {
  const std::filesystem::path file = dir / "script.sh";
  write_file(file, script);
  FILE* pipe = popen(("bash " + file.string()).c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("cannot start bash for " + file.string());
  std::string out;
  char buffer[4096];
  while (const size_t n = fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  pclose(pipe);
  return out;
}

std::map<std::string, std::map<std::string, double>> top_probabilities(const std::string& output) {
  std::map<std::string, std::map<std::string, double>> out;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    for (const auto& t : j["top"]) out[j["image"]][t["class"]] = t["probability"].get<double>();
  }
  return out;
}

bool write_noise_png(const fs::path& path, int side, std::uint64_t seed) {
  cv::RNG rng(seed);
  cv::Mat image(side, side, CV_8UC3);
  rng.fill(image, cv::RNG::UNIFORM, 0, 256);
  return cv::imwrite(path.string(), image);
}

}  // namespace ltfit::testing
