// The fuzz targets' bodies, one per reader, shared by the libFuzzer entry points (*_fuzzer.cpp)
// and the seed generator (seed_corpus.cpp), which checks that each seed reaches the reader's
// success path (or, for a seed named hostile, its refusal).
//
// Each runs ltfit's reader on `input` and returns whether the reader accepted it. An expected
// refusal (the reader's documented error type) returns kRefused; anything else (another
// exception, a broken invariant from fuzz_checks.h, a sanitizer report) escapes or aborts, which
// libFuzzer reports as a crash. Not thread-safe (the checkpoint target reuses one model).
#pragma once

#include <string_view>

namespace ltfit::fuzz {

enum class Outcome { kAccepted, kRefused };

Outcome run_zip(std::string_view input);           // zip_target.cpp
Outcome run_pickle(std::string_view input);        // pickle_target.cpp
Outcome run_checkpoint(std::string_view input);    // checkpoint_target.cpp
Outcome run_image_header(std::string_view input);  // image_header_target.cpp
Outcome run_config(std::string_view input);        // config_target.cpp
Outcome run_resample(std::string_view input);      // resample_target.cpp
Outcome run_csv(std::string_view input);           // csv_target.cpp
Outcome run_cifar(std::string_view input);         // cifar_target.cpp
Outcome run_shards(std::string_view input);        // shards_target.cpp
Outcome run_safetensors(std::string_view input);   // safetensors_target.cpp
Outcome run_jpeg(std::string_view input);          // jpeg_target.cpp (with libjpeg-turbo)

// One-time set-up for every target (single-threaded LibTorch and OpenCV).
void init_targets();

}  // namespace ltfit::fuzz
