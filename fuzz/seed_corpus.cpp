// Writes the fuzz targets' seed corpora and dictionaries, then runs every seed through its
// target and checks the reader did what the seed expects (a valid file accepted, a hostile one
// refused), so the corpora keep reaching the readers' success paths as the formats evolve.
//
//   ltfit_fuzz_seeds OUT_DIR [TORCH_DIR]
//
// OUT_DIR/<target>/<seed> for the targets zip, pickle, checkpoint, image_header, config,
// resample, csv, cifar, shards;
// OUT_DIR/<target>.dict where a dictionary helps. TORCH_DIR holds torch.save files written by
// Python (fuzz/torch_seeds.py), added to the zip and pickle corpora. Exits 0, or 1 when a seed
// did not meet its expectation (listed).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "seeds.h"
#include "targets.h"

namespace fs = std::filesystem;
using namespace ltfit::fuzz;

namespace {

struct Corpus {
  const char* target;
  std::vector<Seed> seeds;
  Outcome (*run)(std::string_view);
};

void write(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

TorchFiles read_torch_files(const fs::path& dir) {
  TorchFiles files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    files.emplace_back(entry.path().filename().string(), bytes.str());
  }
  std::sort(files.begin(), files.end());
  return files;
}

const char* expect_name(Expect e) {
  return e == Expect::kAccepted ? "accepted" : e == Expect::kRefused ? "refused" : "either";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s OUT_DIR [TORCH_DIR]\n", argv[0]);
    return 2;
  }
  const fs::path out = argv[1];
  const TorchFiles torch_files = argc == 3 ? read_torch_files(argv[2]) : TorchFiles{};
  init_targets();
  std::vector<Corpus> corpora;
  corpora.push_back({"zip", zip_seeds(torch_files), run_zip});
  corpora.push_back({"pickle", pickle_seeds(torch_files), run_pickle});
  corpora.push_back({"checkpoint", checkpoint_seeds(), run_checkpoint});
  corpora.push_back({"image_header", image_header_seeds(), run_image_header});
  corpora.push_back({"config", config_seeds(LTFIT_SOURCE_DIR), run_config});
  corpora.push_back({"resample", resample_seeds(), run_resample});
  corpora.push_back({"csv", csv_seeds(), run_csv});
  corpora.push_back({"cifar", cifar_seeds(), run_cifar});
  corpora.push_back({"shards", shards_seeds(), run_shards});
  corpora.push_back({"safetensors", safetensors_seeds(), run_safetensors});
#ifdef LTFIT_WITH_LIBJPEG_TURBO
  corpora.push_back({"jpeg", jpeg_seeds(), run_jpeg});
#endif
  for (const Corpus& c : corpora) {
    fs::create_directories(out / c.target);
    for (const Seed& s : c.seeds) write(out / c.target / s.name, s.bytes);
  }
  write(out / "pickle.dict", pickle_dictionary());
  write(out / "checkpoint.dict", pickle_dictionary());
  write(out / "zip.dict", pickle_dictionary());
  write(out / "config.dict", config_dictionary());
  write(out / "csv.dict", csv_dictionary());
  write(out / "safetensors.dict", safetensors_dictionary());
  int failed = 0;
  for (const Corpus& c : corpora) {
    int accepted = 0;
    for (const Seed& s : c.seeds) {
      const Outcome o = c.run(s.bytes);
      accepted += o == Outcome::kAccepted;
      const bool ok =
          s.expect == Expect::kAny || (s.expect == Expect::kAccepted) == (o == Outcome::kAccepted);
      if (!ok) {
        std::fprintf(stderr, "seed %s/%s: expected %s, was %s\n", c.target, s.name.c_str(),
                     expect_name(s.expect), o == Outcome::kAccepted ? "accepted" : "refused");
        ++failed;
      }
    }
    std::printf("%-13s %3zu seeds, %3d accepted by the reader\n", c.target, c.seeds.size(),
                accepted);
  }
  if (failed > 0) std::fprintf(stderr, "%d seed(s) did not meet their expectation\n", failed);
  return failed > 0 ? 1 : 0;
}
