// epochs.csv's columns: the base ones, then top_k_accuracy (eval.top_k on) or the multi-label
// figures.
#include "ltfit/run/metrics_writer.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/test_support.h"

namespace {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("epochs.csv gains top_k_accuracy when top-k accuracy is on", "[run]") {
  ltfit::testing::TempDir dir;
  ltfit::EpochStats epoch{0, "one_cycle", 0.5, 0.25, 0.75, 0.25, 2.0, 100.0, 0.5, 224};
  epoch.top_k = 5;
  epoch.top_k_accuracy = 0.9375;
  const std::string base =
      "epoch,stage,train_loss,valid_loss,accuracy,error_rate,seconds,images_per_second,"
      "data_wait_seconds,image_size";
  const std::string row = "0,one_cycle,0.500000,0.250000,0.750000,0.250000,2.000,100.00,0.500,224";
  {
    ltfit::MetricsWriter writer(dir.path().string(), 1, std::nullopt, false, /*top_k=*/5);
    writer.on_epoch_end(epoch);
  }
  CHECK(read_text(dir.path() / "epochs.csv") == base + ",top_k_accuracy\n" + row + ",0.937500\n");
  {
    ltfit::MetricsWriter writer(dir.path().string(), 1);  // off: the columns as before
    writer.on_epoch_end(epoch);
  }
  CHECK(read_text(dir.path() / "epochs.csv") == base + "\n" + row + "\n");
}
