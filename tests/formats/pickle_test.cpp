// The pickle machine on hostile input: linear dict building (200k keys), a flood of cheap
// opcodes stopped by the budget, refused globals; and the writer's values read back.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <string>

#include "ltfit/formats/pickle.h"
#include "model/archive_builders.h"

namespace {

namespace op = ltfit::testing::op;
using ltfit::LimitError;
using ltfit::ReadBudget;
using ltfit::pickle::PickleError;
using ltfit::pickle::PickleValue;
using Kind = PickleValue::Kind;

ltfit::pickle::PickleHooks no_globals() {
  ltfit::pickle::PickleHooks hooks;
  hooks.global_allowed = [](const std::string&) { return false; };
  return hooks;
}

// 0: LimitError within the budget; 1: no error; 2: another error.
int unpickle_expecting_limit(const std::string& pickle) {
  ReadBudget budget(64 << 20);
  try {
    ltfit::pickle::unpickle(pickle, no_globals(), budget);
  } catch (const LimitError&) {
    return budget.used() <= budget.max_bytes() ? 0 : 3;
  } catch (const std::exception&) {
    return 2;
  }
  return 1;
}

}  // namespace

TEST_CASE("SETITEMS with 200k keys builds the dict in linear time", "[pickle][model]") {
  // 200k string keys with int values and a repeated key (which replaces its value and keeps its
  // place), between `open` and `close`: a dict (SETITEMS) or a list of the same values (APPENDS).
  const auto keys_pickle = [](const std::string& open, const std::string& close) {
    std::string p = op::kProto2 + open;
    for (int i = 0; i < 200000; ++i) p += op::str("key." + std::to_string(i)) + op::int32(i);
    return p + op::str("key.7") + op::int32(-7) + close;
  };
  // The best of three reads, in seconds (the machine's speed and load cancel in the ratio below).
  const auto best_seconds = [](const std::string& p) {
    double best = 1e9;
    for (int run = 0; run < 3; ++run) {
      ReadBudget budget(std::uint64_t(1) << 30);
      const auto start = std::chrono::steady_clock::now();
      (void)ltfit::pickle::unpickle(p, no_globals(), budget);
      best = std::min(
          best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return best;
  };
  const std::string large = keys_pickle("}(", "u.");
  ReadBudget budget(std::uint64_t(1) << 30);
  const auto result = ltfit::pickle::unpickle(large, no_globals(), budget);
  const PickleValue& dict = result->root();
  REQUIRE(dict.entries.size() == 200000);
  CHECK(dict.entries[7].first->text == "key.7");
  CHECK(dict.entries[7].second->integer == -7);
  CHECK(dict.entries[199999].second->integer == 199999);
  // Against a list of the same 400k values (APPENDS: the same objects, allocations and machine
  // load, no look-ups): a linear dict costs a small multiple of it; the quadratic look-ups took
  // minutes, thousands of times the list.
  const std::string list = keys_pickle("](", "e.");
  const double list_seconds = best_seconds(list);
  const double dict_seconds = best_seconds(large);
  UNSCOPED_INFO("200k keys: dict " << dict_seconds << " s, list of the same values " << list_seconds
                                   << " s");
  CHECK(dict_seconds < 20.0 * list_seconds);
}

TEST_CASE("a flood of cheap opcodes ends at the budget", "[pickle][model]") {
  // 30M NONEs, each a new object: ~5 GB of objects without a budget. Run in a child that may
  // grow by 1 GiB at most, so that a regression fails here instead of taking the machine.
  const std::string flood = op::kProto2 + std::string(30'000'000, 'N') + ".";
  CHECK(ltfit::testing::run_in_capped_child([&] { return unpickle_expecting_limit(flood); },
                                            std::uint64_t(1) << 30) == 0);
  // DUPs create nothing new but still take stack slots.
  const std::string dups = op::kProto2 + "N" + std::string(30'000'000, '2') + ".";
  CHECK(ltfit::testing::run_in_capped_child([&] { return unpickle_expecting_limit(dups); },
                                            std::uint64_t(1) << 30) == 0);
}

TEST_CASE("globals outside the caller's allow-list are refused by name", "[pickle][model]") {
  const std::string p = op::kProto2 + op::global("os", "system") + op::str("touch x") + "\x85R.";
  ReadBudget budget(1 << 20);
  CHECK_THROWS_WITH(ltfit::pickle::unpickle(p, no_globals(), budget),
                    Catch::Contains("refused global 'os.system'"));
  const std::string stacked = op::kProto2 + op::str("builtins") + op::str("eval") + "\x93.";
  CHECK_THROWS_WITH(ltfit::pickle::unpickle(stacked, no_globals(), budget),
                    Catch::Contains("builtins.eval"));
}

TEST_CASE("PickleWriter values read back exactly", "[pickle][model]") {
  ltfit::pickle::PickleWriter w;
  w.empty_dict();
  w.mark();
  w.string("pi");
  w.real(3.141592653589793);
  w.string("tiny");
  w.real(-4.9e-324);
  w.string("none");
  w.none();
  w.string("big");
  w.integer(-(std::int64_t(1) << 62));
  w.string("list");
  w.empty_list();
  w.mark();
  w.integer(1);
  w.boolean(true);
  w.empty_dict();
  w.mark();
  w.integer(5);
  w.string("five");
  w.set_items();
  w.appends();
  w.set_items();
  const std::string bytes = w.finish();
  ReadBudget budget(1 << 20);
  const auto result = ltfit::pickle::unpickle(bytes, no_globals(), budget);
  const PickleValue& root = result->root();
  REQUIRE(root.kind == Kind::kDict);
  CHECK(ltfit::pickle::find_entry(root, "pi")->real == 3.141592653589793);
  CHECK(ltfit::pickle::find_entry(root, "tiny")->real == -4.9e-324);
  CHECK(ltfit::pickle::find_entry(root, "none")->kind == Kind::kNone);
  CHECK(ltfit::pickle::find_entry(root, "big")->integer == -(std::int64_t(1) << 62));
  const PickleValue& list = *ltfit::pickle::find_entry(root, "list");
  REQUIRE(list.items.size() == 3);
  CHECK(list.items[1]->kind == Kind::kBool);
  REQUIRE(list.items[2]->entries.size() == 1);
  CHECK(list.items[2]->entries[0].first->integer == 5);
  CHECK(list.items[2]->entries[0].second->text == "five");
}
