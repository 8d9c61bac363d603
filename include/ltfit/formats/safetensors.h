// Reading and writing safetensors files (Hugging Face's weight format, in which timm publishes its
// weights on the hub) without Python.
//
// A file is an 8-byte little-endian header length N, N bytes of JSON, then the data:
//   {"conv1.weight": {"dtype": "F32", "shape": [64, 3, 7, 7], "data_offsets": [0, 37632]}, ...,
//    "__metadata__": {"format": "pt"}}
// with offsets relative to the data's start. Reading is data only and bounded: the header at most
// kMaxSafetensorsHeader bytes, its JSON at most 4 levels deep and kMaxSafetensorsValues values;
// every entry's dtype known, its shape's byte size (overflow-checked) equal to its offsets' span,
// and the spans tiling the data exactly, in order, with no gap, overlap or byte left over (the
// format's own rule, as the safetensors library checks it). The tensors returned are copies
// (the file's offsets need not be aligned), so reading takes at most the file's size again.
// Errors throw SafetensorsError (a std::runtime_error) saying what is wrong. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <torch/types.h>

namespace ltfit {

inline constexpr std::uint64_t kMaxSafetensorsHeader = 16u << 20;  // 16 MiB of JSON
inline constexpr std::uint64_t kMaxSafetensorsValues = 1u << 20;   // JSON values in the header

class SafetensorsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SafetensorsContent {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;  // in the data's order
  std::map<std::string, std::string> metadata;                 // "__metadata__"
};

// True when `bytes` begin as a safetensors file does (a plausible header length, then '{').
bool looks_like_safetensors(std::string_view bytes);

// The tensors of a safetensors file held in memory. dtypes: F64, F32, F16, BF16, I64, I32, I16,
// I8, U8 and BOOL (others, such as F8_E4M3 or U16, are refused by name).
SafetensorsContent read_safetensors(std::string_view bytes);

// A safetensors file holding `tensors` (any device, layout or contiguity; copied to contiguous
// CPU) in the given order, and `metadata`; the header padded with spaces to a multiple of 8
// bytes, as the safetensors library writes it.
std::string safetensors_bytes(const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                              const std::map<std::string, std::string>& metadata = {});

}  // namespace ltfit
