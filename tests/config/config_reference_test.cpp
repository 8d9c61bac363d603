// Tests of the generated config reference (config_reference.h): it lists every key the loader
// reads, exactly once, with a type, a default equal to to_yaml(Config{})'s, a meaning and the
// range rules; docs/config.md is its current text. With LTFIT_WRITE_DOCS=1 the docs test writes
// docs/config.md instead of comparing (scripts/gen_docs.sh).
#include "ltfit/config/config_reference.h"

#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "config/config_internal.h"
#include "ltfit/config/config_loader.h"

namespace ltfit {
namespace {

// The dotted paths of the leaves (scalars, lists, nulls) of a YAML map.
void collect_leaves(const YAML::Node& node, const std::string& path,
                    std::vector<std::string>& out) {
  if (!node.IsMap()) {
    out.push_back(path);
    return;
  }
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    collect_leaves(entry.second, path.empty() ? key : path + "." + key, out);
  }
}

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

std::map<std::string, ConfigKeyDoc> keys_by_path() {
  std::map<std::string, ConfigKeyDoc> keys;
  for (const auto& entry : config_reference()) keys.emplace(entry.path, entry);
  return keys;
}

TEST_CASE("the reference lists every key of to_yaml(Config{}) exactly once", "[config]") {
  std::vector<std::string> written;
  collect_leaves(YAML::Load(to_yaml(Config{})), "", written);
  REQUIRE(written.size() > 50);

  std::vector<std::string> described;
  for (const auto& entry : config_reference()) {
    if (!entry.section) described.push_back(entry.path);
  }
  CHECK(std::multiset<std::string>(described.begin(), described.end()) ==
        std::multiset<std::string>(written.begin(), written.end()));
  // In the same order: config.yaml is written by a walk of the loader's own field lists.
  CHECK(described == written);

  const std::string markdown = config_reference_markdown();
  for (const auto& path : written) {
    INFO(path);
    CHECK(count_of(markdown, "| `" + path + "` |") == 1);
  }
}

// A number key with a range refuses NaN (which no comparison lets through) and, unless its range
// is unbounded above, infinity, naming the key and its range; a key whose range is the field's
// own Bounds is checked by the same walk that lists it here.
TEST_CASE("every number key with a range refuses NaN and infinity, naming its range", "[config]") {
  int bounded = 0;
  for (const auto& entry : config_reference()) {
    if (entry.section || entry.type != "number" || entry.valid.empty()) continue;
    INFO(entry.path);
    ++bounded;
    std::string nan_error;
    try {
      load_config_from_string("", "t.yaml", {{entry.path, ".nan"}});
    } catch (const ConfigError& e) {
      nan_error = e.what();
    }
    CHECK_THAT(nan_error, Catch::Matchers::Contains(entry.path + ": expected "));
    const bool unbounded_above =
        entry.valid.find(">=") != std::string::npos || entry.valid.find("> 0") != std::string::npos;
    if (entry.valid.find("finite") == std::string::npos && unbounded_above) continue;
    CHECK_THROWS_AS(load_config_from_string("", "t.yaml", {{entry.path, ".inf"}}), ConfigError);
  }
  CHECK(bounded >= 30);
}

TEST_CASE("every reference entry has a meaning, every key a type and a default", "[config]") {
  for (const auto& entry : config_reference()) {
    INFO(entry.path);
    CHECK(entry.meaning.size() >= 8);
    if (entry.section) continue;
    CHECK_FALSE(entry.type.empty());
    CHECK_FALSE(entry.default_value.empty());
  }
}

TEST_CASE("the reference's sections come in the config's order", "[config]") {
  std::vector<std::string> sections;
  for (const auto& entry : config_reference()) {
    if (entry.section) sections.push_back(entry.path);
  }
  CHECK(sections == std::vector<std::string>{"run", "data", "data.csv", "data.shards",
                                             "data.augment", "data.augment.rand_augment",
                                             "data.augment.random_erasing", "model", "train",
                                             "train.optimizer", "train.one_cycle", "train.flat_cos",
                                             "train.mixup", "train.ema", "train.early_stopping",
                                             "train.checkpoint", "eval", "dist"});
}

TEST_CASE("the reference's types, defaults and rules come from the loader, config and rules",
          "[config]") {
  const auto keys = keys_by_path();
  // Enumerations list their table's names; custom readers say what they accept.
  CHECK(keys.at("data.layout").type ==
        "one of auto, folders, kaggle, csv, pattern, cifar10, cifar100, shards");
  CHECK(keys.at("data.cache").type == "one of none, ram, device");
  CHECK(keys.at("data.shards.train").default_value == "train-*.tar");
  CHECK(keys.at("train.precision").type == "one of fp32, fp16, bf16");
  CHECK(keys.at("eval.tta_mode").type == "one of v1, v2");
  CHECK(keys.at("train.schedule").type ==
        "one of one_cycle, flat_cos, cosine, multistep, plateau, constant");
  CHECK(keys.at("data.workers").type == "auto, or an integer");
  CHECK(keys.at("data.batch_size").type == "integer");
  CHECK(keys.at("run.tensorboard").type == "boolean");
  // Defaults as config.yaml writes them.
  CHECK(keys.at("data.batch_size").default_value == "16");
  CHECK(keys.at("data.workers").default_value == "auto");
  CHECK(keys.at("train.optimizer.betas").default_value == "[0.9, 0.99]");
  CHECK(keys.at("train.time_limit").default_value == "null");
  CHECK(keys.at("dist.interface").default_value == "\"\"");
  CHECK(keys.at("run.tensorboard").default_value == "true");
  // Every rule of the range checks, also those that hold for the defaults.
  CHECK_THAT(keys.at("data.batch_size").valid, Catch::Matchers::Contains("an integer >= 2"));
  CHECK_THAT(keys.at("model.arch").valid,
             Catch::Matchers::Contains("one of resnet18, resnet34, resnet50"));
  for (const auto& rule : config_internal::describe_rules()) {
    INFO(rule.path);
    REQUIRE(keys.count(rule.path) == 1);
    CHECK_THAT(keys.at(rule.path).valid, Catch::Matchers::Contains(rule.expected));
  }
}

TEST_CASE("every key of the reference is one the loader accepts, with its default", "[config]") {
  // `--set key=<the reference's default>` for each key, one at a time, loads to Config{}.
  for (const auto& entry : config_reference()) {
    if (entry.section) continue;
    INFO(entry.path << "=" << entry.default_value);
    Config config = load_config_from_string("", "t.yaml", {{entry.path, entry.default_value}});
    config.source.clear();
    CHECK(config == Config{});
  }
}

TEST_CASE("docs/config.md is config_reference_markdown()", "[config]") {
  const std::string path = std::string(LTFIT_SOURCE_DIR) + "/docs/config.md";
  const std::string expected = config_reference_markdown();
  const char* write = std::getenv("LTFIT_WRITE_DOCS");
  if (write != nullptr && std::string(write) == "1") {
    std::ofstream(path, std::ios::binary) << expected;
    SUCCEED("wrote " + path);
    return;
  }
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  const std::string actual = text.str();
  if (actual == expected) return;
  // Name the first line that differs rather than printing both documents.
  std::istringstream have(actual), want(expected);
  std::string have_line, want_line;
  int line = 0;
  while (true) {
    ++line;
    const bool more_have = static_cast<bool>(std::getline(have, have_line));
    const bool more_want = static_cast<bool>(std::getline(want, want_line));
    if (!more_have) have_line = "(end of file)";
    if (!more_want) want_line = "(end of file)";
    if (have_line != want_line || more_have != more_want) break;
  }
  FAIL(path << " is stale (line " << line << ": has '" << have_line << "', should be '" << want_line
            << "'); regenerate with: scripts/gen_docs.sh");
}

}  // namespace
}  // namespace ltfit
