// Config paths and names: a leading `~` in the path keys is the home folder (also through --set,
// where the shell leaves it unexpanded), and a config file that names no run names it after
// itself.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "ltfit/config/config_loader.h"
#include "ltfit/util/home_path.h"
#include "support/test_support.h"

namespace {

// Sets HOME for the scope of one test.
class HomeIs {
 public:
  explicit HomeIs(const char* home) {
    if (const char* old = std::getenv("HOME")) old_ = old;
    ::setenv("HOME", home, 1);
  }
  ~HomeIs() { old_.empty() ? ::unsetenv("HOME") : ::setenv("HOME", old_.c_str(), 1); }
  HomeIs(const HomeIs&) = delete;
  HomeIs& operator=(const HomeIs&) = delete;

 private:
  std::string old_;
};

}  // namespace

TEST_CASE("expand_home: ~ and ~/x are HOME, ~root/x root's, anything else unchanged", "[util]") {
  HomeIs home("/home/tester");
  CHECK(ltfit::expand_home("~") == "/home/tester");
  CHECK(ltfit::expand_home("~/images/a b") == "/home/tester/images/a b");
  CHECK(ltfit::expand_home("~root/x") == "/root/x");
  CHECK(ltfit::expand_home("~no-such-user-xyz/x") == "~no-such-user-xyz/x");
  CHECK(ltfit::expand_home("data/~/x") == "data/~/x");
  CHECK(ltfit::expand_home("") == "");
}

TEST_CASE("the config's path keys expand a leading ~, from the file and from --set", "[config]") {
  HomeIs home("/home/tester");
  const ltfit::Config from_file = ltfit::load_config_from_string(
      "data: {root: ~/pets, csv: {file: ~/labels.csv}}\nrun: {out_dir: ~/runs}\n"
      "model: {pretrained: ~/w/resnet34.pth}\n",
      "t.yaml");
  CHECK(from_file.data.root == "/home/tester/pets");
  CHECK(from_file.data.csv.file == "/home/tester/labels.csv");
  CHECK(from_file.run.out_dir == "/home/tester/runs");
  CHECK(from_file.model.pretrained.path == "/home/tester/w/resnet34.pth");
  const ltfit::Config from_set =
      ltfit::load_config_from_string("", "t.yaml", {ltfit::parse_override("data.root=~/other")});
  CHECK(from_set.data.root == "/home/tester/other");
  // Names are not paths: a run called "~x" stays "~x".
  CHECK(ltfit::load_config_from_string("run: {name: ~x}", "t.yaml").run.name == "~x");
}

TEST_CASE("a config file that names no run names it after the file", "[config]") {
  ltfit::testing::TempDir dir;
  ltfit::testing::write_file(dir.path() / "pets.yaml", "data: {batch_size: 8}\n");
  CHECK(ltfit::load_config((dir.path() / "pets.yaml").string()).run.name == "pets");
  ltfit::testing::write_file(dir.path() / "named.yaml", "run: {name: mine}\n");
  CHECK(ltfit::load_config((dir.path() / "named.yaml").string()).run.name == "mine");
  CHECK(ltfit::load_config((dir.path() / "pets.yaml").string(),
                           {ltfit::parse_override("run.name=other")})
            .run.name == "other");
}
