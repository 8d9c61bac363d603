// Seed corpora of the fuzz targets, generated at run time (no binary is committed): files that
// ltfit and torch.save write, images OpenCV encodes, the repository's configs, and hand-made
// edge cases (deep nesting, stride-0 views, floods of cheap opcodes, huge claimed sizes).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ltfit::fuzz {

// What the target's reader must do with a seed (seed_corpus.cpp checks it): most seeds are
// valid files that must reach the success path; hostile ones must be refused.
enum class Expect { kAccepted, kRefused, kAny };

struct Seed {
  std::string name;
  std::string bytes;
  Expect expect = Expect::kAccepted;
};

// Raw torch.save files written by Python (fuzz/torch_seeds.py), if any, by file name.
using TorchFiles = std::vector<std::pair<std::string, std::string>>;

std::vector<Seed> zip_seeds(const TorchFiles& torch_files);         // seeds_archive.cpp
std::vector<Seed> pickle_seeds(const TorchFiles& torch_files);      // seeds_archive.cpp
std::vector<Seed> checkpoint_seeds();                               // seeds_checkpoint.cpp
std::vector<Seed> image_header_seeds();                             // seeds_image_config.cpp
std::vector<Seed> config_seeds(const std::filesystem::path& repo);  // seeds_image_config.cpp
std::vector<Seed> resample_seeds();                                 // seeds_image_config.cpp
std::vector<Seed> csv_seeds();                                      // seeds_csv.cpp
std::vector<Seed> cifar_seeds();                                    // seeds_cifar.cpp
std::vector<Seed> shards_seeds();                                   // seeds_shards.cpp
std::vector<Seed> safetensors_seeds();                              // seeds_safetensors.cpp
std::vector<Seed> jpeg_seeds();                                     // seeds_image_config.cpp

// libFuzzer dictionaries (-dict=): pickle opcodes and torch's global names; config keys; CSV
// quotes and line breaks.
std::string pickle_dictionary();       // seeds_archive.cpp
std::string config_dictionary();       // seeds_image_config.cpp
std::string safetensors_dictionary();  // seeds_safetensors.cpp
std::string csv_dictionary();          // seeds_csv.cpp

}  // namespace ltfit::fuzz
