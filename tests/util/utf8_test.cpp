// Names as valid UTF-8, losslessly (util/utf8.h) and JSON documents that hold any bytes
// (util/json.h): escaping keeps valid UTF-8, escapes backslashes and invalid bytes, and always
// round-trips; dump_json never throws where nlohmann's dump does.
#include "ltfit/util/utf8.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <random>
#include <string>

#include "ltfit/util/json.h"

namespace {

std::string random_text(std::mt19937& rng, std::size_t max_length) {
  std::string bytes(rng() % (max_length + 1), '\0');
  // Mostly bytes that make UTF-8 sequences (and break them), some ASCII and backslashes.
  static const std::string kInteresting = "\\x\x80\xbf\xc0\xc1\xc2\xdf\xe0\xed\xef\xf0\xf4\xf5\xff";
  for (char& c : bytes) {
    const unsigned pick = rng() % 4;
    c = pick == 0   ? kInteresting[rng() % kInteresting.size()]
        : pick == 1 ? static_cast<char>('a' + rng() % 26)
                    : static_cast<char>(rng() & 0xFF);
  }
  return bytes;
}

}  // namespace

TEST_CASE("escape_utf8 keeps valid UTF-8 and escapes backslashes and invalid bytes", "[utf8]") {
  CHECK(ltfit::escape_utf8("cat.123.jpg") == "cat.123.jpg");
  CHECK(ltfit::escape_utf8("chat \xc3\xa9t\xc3\xa9 \xf0\x9f\x90\x88") ==
        "chat \xc3\xa9t\xc3\xa9 \xf0\x9f\x90\x88");            // é and U+1F408 kept
  CHECK(ltfit::escape_utf8("caf\xe9.jpg") == "caf\\xe9.jpg");  // Latin-1 é
  CHECK(ltfit::escape_utf8("a\\b") == "a\\\\b");
  CHECK(ltfit::escape_utf8("\xc0\xaf") == "\\xc0\\xaf");                    // overlong '/'
  CHECK(ltfit::escape_utf8("\xed\xa0\x80") == "\\xed\\xa0\\x80");           // encoded surrogate
  CHECK(ltfit::escape_utf8("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");  // > U+10FFFF
  CHECK(ltfit::escape_utf8("\xe2\x82") == "\\xe2\\x82");                    // truncated sequence
  CHECK(ltfit::escape_utf8(std::string("a\0b", 3)) == std::string("a\0b", 3));
  CHECK(ltfit::unescape_utf8("caf\\xe9.jpg") == std::string("caf\xe9.jpg"));
  CHECK(ltfit::unescape_utf8("a\\\\xe9") == std::string("a\\xe9"));
  CHECK_FALSE(ltfit::unescape_utf8("a\\n").has_value());
  CHECK_FALSE(ltfit::unescape_utf8("a\\x4").has_value());
  CHECK_FALSE(ltfit::unescape_utf8("a\\").has_value());
}

TEST_CASE("escape_utf8 round-trips any bytes and always yields what JSON accepts", "[utf8]") {
  std::mt19937 rng(20240501);
  for (int i = 0; i < 10000; ++i) {
    const std::string bytes = random_text(rng, 24);
    const std::string escaped = ltfit::escape_utf8(bytes);
    INFO("case " << i);
    REQUIRE(ltfit::is_valid_utf8(escaped));
    REQUIRE(ltfit::unescape_utf8(escaped) == bytes);
  }
}

TEST_CASE("is_valid_utf8 agrees with nlohmann::json's own check", "[utf8]") {
  std::mt19937 rng(7);
  for (int i = 0; i < 10000; ++i) {
    const std::string bytes = random_text(rng, 8);
    bool json_accepts = true;
    try {
      (void)nlohmann::json(bytes).dump();
    } catch (const nlohmann::json::type_error&) {
      json_accepts = false;
    }
    INFO("case " << i << ": " << ltfit::escape_utf8(bytes));
    REQUIRE(ltfit::is_valid_utf8(bytes) == json_accepts);
  }
}

TEST_CASE("dump_json writes documents with any bytes in values and keys, recoverably", "[utf8]") {
  const std::string root = "/data/r\xf6ot";
  const std::string cls = "chien\xff";
  nlohmann::json j = {{"root", root}, {"classes", {cls, "cat"}}, {"nested", {{cls, 1}}}};
  CHECK_THROWS_AS(j.dump(), nlohmann::json::type_error);  // what summary.json used to hit
  const std::string text = ltfit::dump_json(j);
  const nlohmann::json back = nlohmann::json::parse(text);
  CHECK(ltfit::unescape_json_string(back["root"].get<std::string>()) == root);
  CHECK(ltfit::unescape_json_string(back["classes"][0].get<std::string>()) == cls);
  CHECK(back["classes"][1] == "cat");
  CHECK(back["nested"].contains("chien\\xff"));
  nlohmann::ordered_json ordered = {{"disk", root}};
  CHECK(nlohmann::ordered_json::parse(ltfit::dump_json(ordered))["disk"] == "/data/r\\xf6ot");
}
