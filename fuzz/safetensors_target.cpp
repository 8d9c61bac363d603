// Fuzz target: the safetensors reader (src/formats/safetensors.cpp), on the raw bytes of a file.
//
// Expected outcomes are a SafetensorsError or a content whose every tensor has the bytes its
// dtype and shape say; its copies never exceed the input's size. A crash, an ASan/UBSan report,
// std::bad_alloc, another exception or a run past the time or memory limit is a finding.
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include <torch/torch.h>

#include "fuzz_checks.h"
#include "ltfit/formats/safetensors.h"
#include "targets.h"

namespace ltfit::fuzz {

Outcome run_safetensors(std::string_view input) {
  try {
    const SafetensorsContent content = read_safetensors(input);
    std::uint64_t bytes = 0;
    for (const auto& [name, tensor] : content.tensors) {
      if (!tensor.is_contiguous() || tensor.device() != torch::kCPU) {
        throw std::logic_error("tensor '" + name + "' is not a contiguous CPU tensor");
      }
      bytes += tensor.nbytes();
    }
    if (bytes > input.size()) throw std::logic_error("tensors larger than the file");
    return Outcome::kAccepted;
  } catch (const SafetensorsError& e) {
    note_refusal(e.what());
  }
  return Outcome::kRefused;
}

}  // namespace ltfit::fuzz
