#include "ltfit/util/download.h"

#include <catch2/catch.hpp>

#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <string>
#include <thread>

#include "ltfit/util/error.h"
#include "ltfit/util/sha256.h"
#include "ltfit/util/signals.h"
#include "support/http_server.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using ltfit::testing::HttpServer;
using ltfit::testing::TempDir;

namespace {

std::string random_bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string bytes(n, '\0');
  for (char& c : bytes) c = static_cast<char>(rng() & 0xFF);
  return bytes;
}

ltfit::DownloadOptions quiet() {
  ltfit::DownloadOptions options;
  options.show_progress = false;
  return options;
}

// Names in `dir` that a download leaves behind besides its result (`*.partial*`).
std::vector<std::string> partial_files(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.find(".partial") != std::string::npos) found.push_back(name);
  }
  return found;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("sha256 matches the FIPS 180-2 test vectors", "[download]") {
  CHECK(ltfit::sha256_hex("abc") ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(ltfit::sha256_hex("") ==
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  TempDir dir;
  // Longer than one read chunk, so chunked hashing is exercised.
  const std::string million_a(1000000, 'a');
  ltfit::testing::write_file(dir.path() / "a.bin", million_a);
  CHECK(ltfit::sha256_file((dir.path() / "a.bin").string()) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  CHECK_THROWS_AS(ltfit::sha256_file((dir.path() / "missing").string()), ltfit::RuntimeError);
}

TEST_CASE("download_file fetches a file over loopback HTTP", "[download]") {
  REQUIRE(ltfit::testing::python3_available());
  TempDir served, out;
  const std::string content = random_bytes(300000, 7);
  ltfit::testing::write_file(served.path() / "blob.bin", content);
  HttpServer server(served.path());
  const fs::path dest = out.path() / "sub" / "blob.bin";

  ltfit::download_file(server.url() + "/blob.bin", dest.string(), quiet());
  CHECK(ltfit::testing::read_file(dest) == content);
  CHECK_FALSE(fs::exists(dest.string() + ".partial"));

  SECTION("with the progress display on, the result is the same") {
    const fs::path again = out.path() / "again.bin";
    ltfit::download_file(server.url() + "/blob.bin", again.string());
    CHECK(ltfit::testing::read_file(again) == content);
  }
  SECTION("redirects are followed") {
    // http.server answers /dir with a 301 to /dir/ and then a directory listing.
    fs::create_directories(served.path() / "dir");
    ltfit::testing::write_file(served.path() / "dir" / "inside.txt", "x");
    const fs::path listing = out.path() / "listing.html";
    ltfit::download_file(server.url() + "/dir", listing.string(), quiet());
    CHECK(ltfit::testing::read_file(listing).find("inside.txt") != std::string::npos);
  }
}

TEST_CASE("download_file reports failures with the URL and leaves no file", "[download]") {
  REQUIRE(ltfit::testing::python3_available());
  TempDir served, out;
  ltfit::testing::write_file(served.path() / "blob.bin", "payload");
  HttpServer server(served.path());
  const fs::path dest = out.path() / "blob.bin";

  SECTION("HTTP 404") {
    const std::string url = server.url() + "/missing.bin";
    try {
      ltfit::download_file(url, dest.string(), quiet());
      FAIL("expected a RuntimeError");
    } catch (const ltfit::RuntimeError& e) {
      CHECK_THAT(e.what(), Catch::Contains(url) && Catch::Contains("HTTP 404"));
    }
  }
  SECTION("connection refused") {
    server.stop();
    const std::string url = server.url() + "/blob.bin";
    try {
      ltfit::download_file(url, dest.string(), quiet());
      FAIL("expected a RuntimeError");
    } catch (const ltfit::RuntimeError& e) {
      CHECK_THAT(e.what(), Catch::Contains(url));
    }
  }
  SECTION("verification rejects the file") {
    ltfit::DownloadOptions options = quiet();
    std::string seen;
    options.verify = [&](const std::string& partial) {
      seen = ltfit::testing::read_file(partial);
      throw ltfit::CheckpointError("rejected");
    };
    CHECK_THROWS_WITH(ltfit::download_file(server.url() + "/blob.bin", dest.string(), options),
                      "rejected");
    CHECK(seen == "payload");
  }
  CHECK_FALSE(fs::exists(dest));
  CHECK_FALSE(fs::exists(dest.string() + ".partial"));
}

TEST_CASE("download_file never writes through a file planted at a partial name", "[download]") {
  REQUIRE(ltfit::testing::python3_available());
  TempDir served, out;
  ltfit::testing::write_file(served.path() / "blob.bin", "new weights");
  HttpServer server(served.path());
  const fs::path dest = out.path() / "blob.bin";
  const fs::path victim = out.path() / "victim.txt";
  ltfit::testing::write_file(victim, "precious");
  // The fixed name of earlier versions, as a symlink to a file the attacker wants overwritten.
  fs::create_symlink(victim, dest.string() + ".partial");

  ltfit::download_file(server.url() + "/blob.bin", dest.string(), quiet());
  CHECK(ltfit::testing::read_file(dest) == "new weights");
  CHECK(ltfit::testing::read_file(victim) == "precious");
  CHECK(fs::is_symlink(dest.string() + ".partial"));  // untouched, not ours to remove
  CHECK(partial_files(out.path()).size() == 1);
}

TEST_CASE("download_file gives up on a server slower than the low-speed limit", "[download]") {
  REQUIRE(ltfit::testing::python3_available());
  TempDir served, out;
  ltfit::testing::write_file(served.path() / "blob.bin", std::string(24, 'x'));
  HttpServer server(served.path());
  const fs::path dest = out.path() / "blob.bin";
  const std::string url = server.slow_url("blob.bin", /*bytes_per_second=*/4);  // 6 s in all

  SECTION("through the options") {
    ltfit::DownloadOptions options = quiet();
    options.low_speed_bytes_per_s = 1024;
    options.low_speed_time_s = 2;
    const auto start = std::chrono::steady_clock::now();
    try {
      ltfit::download_file(url, dest.string(), options);
      FAIL("expected a RuntimeError");
    } catch (const ltfit::RuntimeError& e) {
      CHECK_THAT(e.what(), Catch::Contains(url));
      CHECK_THAT(e.hint(), Catch::Contains("LTFIT_DOWNLOAD_LOW_SPEED_TIME"));
    }
    CHECK(seconds_since(start) < 5.0);
  }
  SECTION("through the environment (what the CLI tests use)") {
    ::setenv("LTFIT_DOWNLOAD_LOW_SPEED_TIME", "2", 1);
    const auto start = std::chrono::steady_clock::now();
    CHECK_THROWS_AS(ltfit::download_file(url, dest.string(), quiet()), ltfit::RuntimeError);
    ::unsetenv("LTFIT_DOWNLOAD_LOW_SPEED_TIME");
    CHECK(seconds_since(start) < 5.0);
  }
  CHECK_FALSE(fs::exists(dest));
  CHECK(partial_files(out.path()).empty());
}

TEST_CASE("SIGTERM stops a download within a second and removes the partial file", "[download]") {
  REQUIRE(ltfit::testing::python3_available());
  TempDir served, out;
  ltfit::testing::write_file(served.path() / "blob.bin", std::string(30, 'x'));
  HttpServer server(served.path());
  const fs::path dest = out.path() / "blob.bin";
  ltfit::StopSignals signals;  // as `ltfit train` has; the signal only sets the flag
  const std::string url = GENERATE(as<std::string>{}, "slow", "hang");
  INFO(url);
  const std::string full =
      url == "slow" ? server.slow_url("blob.bin", 10) : server.hang_url("blob.bin");
  std::thread sender([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    ::kill(::getpid(), SIGTERM);
  });
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(ltfit::download_file(full, dest.string(), quiet()), ltfit::InterruptedError);
  sender.join();
  CHECK(seconds_since(start) < 2.5);  // the slow file alone takes 3 s, the hang for ever
  CHECK_FALSE(fs::exists(dest));
  CHECK(partial_files(out.path()).empty());
  ltfit::StopSignals::reset();
}

TEST_CASE("max_bytes: a download stops as soon as the server sends more than the file's size",
          "[download]") {
  REQUIRE(ltfit::testing::python3_available());
  TempDir served, out;
  ltfit::testing::write_file(served.path() / "blob.bin", random_bytes(200000, 3));
  HttpServer server(served.path());
  const fs::path dest = out.path() / "blob.bin";
  auto bounded = [](std::int64_t max_bytes) {
    ltfit::DownloadOptions options = quiet();
    options.max_bytes = max_bytes;
    return options;
  };
  SECTION("streamed without a Content-Length: cut off at the bound") {
    const auto start = std::chrono::steady_clock::now();
    try {
      ltfit::download_file(server.flood_url(400000000, "blob.bin"), dest.string(), bounded(100000));
      FAIL("a 400 MB stream was accepted for a file of at most 100000 bytes");
    } catch (const ltfit::RuntimeError& e) {
      CHECK_THAT(e.what(), Catch::Matchers::Contains("more than 100000 bytes"));
    }
    CHECK(seconds_since(start) < 3.0);  // not the whole 400 MB
  }
  SECTION("a Content-Length above the bound is refused before the body") {
    CHECK_THROWS_WITH(
        ltfit::download_file(server.url() + "/blob.bin", dest.string(), bounded(199999)),
        Catch::Matchers::Contains("more than 199999 bytes"));
  }
  SECTION("a file of exactly the bound is downloaded") {
    ltfit::download_file(server.url() + "/blob.bin", dest.string(), bounded(200000));
    CHECK(fs::file_size(dest) == 200000);
  }
  if (!fs::exists(dest)) CHECK(fs::is_empty(out.path()));
  CHECK(partial_files(out.path()).empty());
}
