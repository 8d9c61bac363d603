// The command files in apps/ltfit/ declare flags and call one job: none of them reads a
// checkpoint, builds a model, an optimizer or a loader, or indexes data itself (jobs/ does:
// load_model_for_eval is the one checkpoint -> model path, make_training_setup the one place a
// training run's parts are built). A source check, so that a command growing its own copy fails.
#include <catch2/catch.hpp>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "support/test_support.h"

TEST_CASE("command files hold no job logic: no checkpoint, model, optimizer or loader", "[jobs]") {
  namespace fs = std::filesystem;
  const fs::path apps = ltfit::testing::source_dir() / "apps" / "ltfit";
  REQUIRE(fs::is_directory(apps));
  // Whole identifiers: a call of run_lr_find_job is fine, one of lr_find is not.
  const std::vector<std::string> forbidden = {"load_checkpoint",
                                              "read_checkpoint_meta",
                                              "save_checkpoint",
                                              "build_model",
                                              "ResNet",
                                              "Classifier",
                                              "make_classifier",
                                              "make_optimizer",
                                              "index_dataset",
                                              "Loader",
                                              "load_pretrained_body",
                                              "lr_find",
                                              "find_largest_batch",
                                              "InputArchive"};
  int files = 0;
  for (const auto& entry : fs::directory_iterator(apps)) {
    if (entry.path().extension() != ".cpp" && entry.path().extension() != ".h") continue;
    ++files;
    // The code only: comments and string literals (help texts, file names) may name anything.
    const std::string text = std::regex_replace(ltfit::testing::read_file(entry.path()),
                                                std::regex(R"(//[^\n]*|"(\\.|[^"\\])*")"), "");
    for (const auto& name : forbidden) {
      INFO(entry.path().filename().string() << " uses " << name);
      CHECK_FALSE(std::regex_search(text, std::regex("\\b" + name + "\\b")));
    }
  }
  CHECK(files >= 10);
}
