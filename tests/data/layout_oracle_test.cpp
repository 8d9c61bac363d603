// The hidden "[.layout_oracle]" case, run by tests/data/layout_oracle.sh (fastai's RegexLabeller
// and RandomSplitter as the oracle of the pattern layout and the data.valid_pct split).
#include <cstdlib>
#include <filesystem>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "ltfit/data/dataset_index.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using ltfit::testing::write_file;

// Run by tests/data/layout_oracle.sh: indexes the tree under $LTFIT_LAYOUT_ORACLE_DIR/root once per
// case of request.json ({"cases": [{"label_pattern", "valid_pct", "seed"}]}) with layout pattern,
// and writes what ltfit found to ltfit.json for tests/data/layout_oracle.py to compare with
// fastai's RegexLabeller and RandomSplitter.
TEST_CASE("layout oracle: pattern labels and the valid_pct split for fastai to check",
          "[.layout_oracle]") {
  const char* dir = std::getenv("LTFIT_LAYOUT_ORACLE_DIR");
  if (dir == nullptr) FAIL("LTFIT_LAYOUT_ORACLE_DIR is not set: run tests/data/layout_oracle.sh");
  const fs::path base(dir);
  const auto request = nlohmann::json::parse(ltfit::testing::read_file(base / "request.json"));
  nlohmann::json results = nlohmann::json::array();
  for (const auto& c : request.at("cases")) {
    ltfit::DataConfig data;
    data.root = (base / "root").string();
    data.layout = ltfit::DataLayout::kPattern;
    data.label_pattern = c.at("label_pattern").get<std::string>();
    data.valid_pct = c.at("valid_pct").get<double>();
    const auto index = ltfit::index_dataset(data, c.at("seed").get<std::uint64_t>(), false);
    nlohmann::json out = c;
    for (const auto& [name, samples] :
         {std::pair{"train", &index.train}, {"valid", &index.valid}}) {
      out[name] = nlohmann::json::array();
      for (const auto& s : *samples) {
        out[name].push_back(
            {{"path", s.path}, {"label", index.classes.at(static_cast<std::size_t>(s.label))}});
      }
    }
    out["notes"] = index.notes;
    results.push_back(out);
  }
  write_file(base / "ltfit.json", results.dump(1));
  CHECK(results.size() == request.at("cases").size());
}
