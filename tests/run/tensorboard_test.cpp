// TensorBoard events (run/event_file.h, run/tensorboard.h): CRC-32C and TFRecord framing against
// TensorBoard's own values, every record read back with the generated protobuf classes, the
// writer's tags and steps, and write failures that name the file.
#include "ltfit/run/tensorboard.h"

#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "ltfit/run/event_file.h"
#include "ltfit/util/atomic_file.h"
#include "ltfit_tensorboard.pb.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::TempDir;

namespace {

std::uint64_t read_le(const std::string& bytes, std::size_t at, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

// Every record of an events file, its CRCs checked, parsed as TensorBoard's Event.
std::vector<ltfit::tb::Event> read_events(const fs::path& path) {
  const std::string bytes = ltfit::testing::read_file(path);
  std::vector<ltfit::tb::Event> events;
  std::size_t at = 0;
  while (at < bytes.size()) {
    REQUIRE(at + 12 <= bytes.size());
    const std::uint64_t length = read_le(bytes, at, 8);
    REQUIRE(read_le(bytes, at + 8, 4) == ltfit::mask_crc32c(ltfit::crc32c(bytes.substr(at, 8))));
    REQUIRE(at + 12 + length + 4 <= bytes.size());
    const std::string payload = bytes.substr(at + 12, length);
    REQUIRE(read_le(bytes, at + 12 + length, 4) == ltfit::mask_crc32c(ltfit::crc32c(payload)));
    ltfit::tb::Event event;
    REQUIRE(event.ParseFromString(payload));
    events.push_back(event);
    at += 12 + length + 4;
  }
  return events;
}

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(dir)) out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("CRC-32C and TFRecord framing give TensorBoard's values", "[tensorboard]") {
  CHECK(ltfit::crc32c("123456789") == 0xE3069283u);  // the CRC-32C check value
  CHECK(ltfit::crc32c("") == 0u);
  // Python tensorboard's masked_crc32c (tensorboard.compat.tensorflow_stub) gives these.
  CHECK(ltfit::mask_crc32c(ltfit::crc32c("123456789")) == 0xC78AB0E5u);
  CHECK(ltfit::mask_crc32c(0) == 0xA282EAD8u);
  const std::string framed = ltfit::frame_record("abc");
  const std::string expected(
      "\x03\0\0\0\0\0\0\0\xb0\x99\x49\x0e"
      "abc"
      "\x6e\x57\xf1\x21",
      19);
  CHECK(framed == expected);
}

TEST_CASE("an events file reads back record by record with the generated classes",
          "[tensorboard]") {
  TempDir dir;
  const fs::path path = dir.path() / "events.out.tfevents.1.host.2.0";
  {
    ltfit::EventFileWriter file(path.string());
    const std::vector<std::string> tags{"a", "b/c"};
    const std::vector<double> values{0.1, 1e30};
    file.add_scalars(7, tags, values);
    file.add_session_start(5);
    file.add_image(9, "img", {std::string("\x89PNG fake", 9), 3, 4});
    file.flush();
    CHECK(file.bytes() == static_cast<std::int64_t>(fs::file_size(path)));
  }
  const auto events = read_events(path);
  REQUIRE(events.size() == 4);
  CHECK(events[0].file_version() == "brain.Event:2");
  CHECK(events[0].wall_time() > 1.6e9);
  CHECK(events[1].step() == 7);
  REQUIRE(events[1].summary().value_size() == 2);
  CHECK(events[1].summary().value(0).tag() == "a");
  CHECK(events[1].summary().value(0).simple_value() == 0.1f);  // float32, as TensorBoard keeps it
  CHECK(events[1].summary().value(1).tag() == "b/c");
  CHECK(events[1].summary().value(1).simple_value() == 1e30f);
  CHECK(events[2].step() == 5);
  CHECK(events[2].session_log().status() == ltfit::tb::SessionLog::START);
  const auto& image = events[3].summary().value(0).image();
  CHECK(events[3].step() == 9);
  CHECK((image.height() == 3 && image.width() == 4 && image.colorspace() == 3));
  CHECK(image.encoded_image_string() == std::string("\x89PNG fake", 9));
}

TEST_CASE("the training writer logs steps, epochs at their last step, and images",
          "[tensorboard]") {
  TempDir dir;
  const fs::path tb = dir.path() / "run" / "tb";
  {
    ltfit::TensorBoardWriter writer(tb.string(), /*groups=*/2, /*first_step=*/4);
    writer.add_image("train/batch", {"png", 1, 1});
    writer.on_step({4, 1, {0.001, 0.01}, 0.9, 0.5, 65536.0});
    writer.on_step({5, 1, {0.002, 0.02}, 0.85, 0.25, 65536.0});
    writer.on_epoch_end({1, "one_cycle", 0.4, 0.3, 0.75, 0.25, 2.5, 100.0, 0.125, 96});
    writer.add_image("valid/confusion_matrix", {"png", 1, 1});
    writer.flush();
  }
  const auto files = files_in(tb);
  REQUIRE(files.size() == 1);
  const std::string name = files[0].filename().string();
  CHECK_THAT(name,
             Contains("events.out.tfevents.") && Contains("." + std::to_string(getpid()) + "."));
  const auto events = read_events(files[0]);
  REQUIRE(events.size() == 7);  // version, START, grid, 2 steps, epoch, confusion
  CHECK(
      (events[1].step() == 4 && events[1].session_log().status() == ltfit::tb::SessionLog::START));
  CHECK((events[2].step() == 4 && events[2].summary().value(0).tag() == "train/batch"));
  const auto& step = events[4].summary();
  REQUIRE(step.value_size() == 5);
  const char* step_tags[] = {"train/loss", "lr/group0", "lr/group1", "momentum", "loss_scale"};
  const float step_values[] = {0.25f, 0.002f, 0.02f, 0.85f, 65536.0f};
  for (int i = 0; i < 5; ++i) {
    CHECK(step.value(i).tag() == step_tags[i]);
    CHECK(step.value(i).simple_value() == step_values[i]);
  }
  CHECK(events[4].step() == 5);
  const auto& epoch = events[5].summary();
  CHECK(events[5].step() == 5);  // the epoch's last step: one axis with the steps
  REQUIRE(epoch.value_size() == 9);
  CHECK((epoch.value(0).tag() == "epoch" && epoch.value(0).simple_value() == 1.0f));
  CHECK((epoch.value(3).tag() == "epoch/accuracy" && epoch.value(3).simple_value() == 0.75f));
  CHECK((epoch.value(7).tag() == "epoch/seconds" && epoch.value(7).simple_value() == 2.5f));
  CHECK((epoch.value(8).tag() == "epoch/image_size" && epoch.value(8).simple_value() == 96.0f));
  CHECK((events[6].step() == 5 && events[6].summary().value(0).tag() == "valid/confusion_matrix"));

  // A second session (a resumed run) writes a file of its own beside the first.
  { ltfit::TensorBoardWriter again(tb.string(), 2, 6); }
  CHECK(files_in(tb).size() == 2);
}

TEST_CASE("a run with top-k accuracy logs epoch/top_k_accuracy beside the epoch's figures",
          "[tensorboard]") {
  TempDir dir;
  const fs::path tb = dir.path() / "tb";
  {
    ltfit::TensorBoardWriter writer(tb.string(), /*groups=*/1, /*first_step=*/0);
    writer.on_step({0, 0, {0.001}, 0.9, 0.5, 1.0});
    ltfit::EpochStats epoch{0, "one_cycle", 0.4, 0.3, 0.75, 0.25, 2.5, 100.0, 0.125, 96};
    epoch.top_k = 5;
    epoch.top_k_accuracy = 0.875;
    writer.on_epoch_end(epoch);
  }
  const auto files = files_in(tb);
  REQUIRE(files.size() == 1);
  const auto events = read_events(files[0]);
  REQUIRE(events.size() == 5);  // version, START, step, epoch figures, top-k
  CHECK(events[3].summary().value_size() == 9);
  const auto& top_k = events[4].summary();
  CHECK(events[4].step() == 0);
  REQUIRE(top_k.value_size() == 1);
  CHECK(
      (top_k.value(0).tag() == "epoch/top_k_accuracy" && top_k.value(0).simple_value() == 0.875f));
}

TEST_CASE("an unwritable TensorBoard folder or file is a WriteError naming it", "[tensorboard]") {
  TempDir dir;
  const fs::path blocker = dir.path() / "file";
  ltfit::testing::write_file(blocker, "not a folder");
  try {
    ltfit::TensorBoardWriter writer((blocker / "tb").string(), 1, 0);
    FAIL("expected a WriteError");
  } catch (const ltfit::WriteError& e) {
    CHECK_THAT(e.what(), Contains((blocker / "tb").string()) && Contains("TensorBoard"));
    CHECK(e.exit_code() == ltfit::ExitCode::kRuntime);
  }
  try {  // an existing file is never overwritten
    ltfit::EventFileWriter file(blocker.string());
    FAIL("expected a WriteError");
  } catch (const ltfit::WriteError& e) {
    CHECK_THAT(e.what(), Contains(blocker.string()) && Contains("File exists"));
  }
}

TEST_CASE("a write that fails mid-run (file size limit) is a WriteError naming the file",
          "[tensorboard]") {
  TempDir dir;
  const fs::path path = dir.path() / "events.out.tfevents.limited";
  // In a child: RLIMIT_FSIZE makes write(2) fail with EFBIG once the file reaches 4 KiB.
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{4096, 4096};
    setrlimit(RLIMIT_FSIZE, &limit);
    int code = 10;
    try {
      ltfit::EventFileWriter file(path.string());
      const std::vector<std::string> tags{"x"};
      for (int i = 0; i < 1000; ++i) file.add_scalars(i, tags, std::vector<double>{1.0 * i});
      file.flush();
    } catch (const ltfit::WriteError& e) {
      const std::string what = e.what();
      code = what.find(path.string()) != std::string::npos && e.disk_full() ? 0 : 11;
    } catch (...) {
      code = 12;
    }
    _exit(code);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);  // 10: no error at all; 11: the message or errno was wrong
}
