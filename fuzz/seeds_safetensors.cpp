// Seeds of the safetensors target (safetensors_target.cpp): files ltfit's writer makes (every
// dtype, metadata, empty and scalar tensors), and malformed ones the reader must refuse (a header
// length past the file, gaps, overlaps, bad dtypes, deep nesting).
#include <cstring>
#include <string>

#include <torch/torch.h>

#include "ltfit/formats/safetensors.h"
#include "seeds.h"

namespace ltfit::fuzz {

namespace {

std::string with_header(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const std::uint64_t n = header.size();
  std::memcpy(out.data(), &n, sizeof n);
  return out + header + data;
}

}  // namespace

std::vector<Seed> safetensors_seeds() {
  const std::string every_dtype =
      safetensors_bytes({{"conv.weight", torch::randn({2, 3, 2, 2})},
                         {"half", torch::randn({3}).to(torch::kFloat16)},
                         {"brain", torch::randn({2}).to(torch::kBFloat16)},
                         {"bn.num_batches_tracked", torch::tensor(3, torch::kInt64)},
                         {"mask", torch::tensor({true, false})},
                         {"empty", torch::zeros({0, 2})}},
                        {{"format", "pt"}});
  const std::string floats = std::string(8, '\0');
  return {
      {"every-dtype", every_dtype},
      {"empty", safetensors_bytes({})},
      {"minimal", with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", floats)},
      {"truncated", every_dtype.substr(0, every_dtype.size() - 5), Expect::kRefused},
      {"gap", with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", floats),
       Expect::kRefused},
      {"overlap",
       with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                   R"("b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})",
                   floats),
       Expect::kRefused},
      {"bad-dtype",
       with_header(R"({"a":{"dtype":"F8_E5M2","shape":[2],"data_offsets":[0,2]}})", "xx"),
       Expect::kRefused},
      {"deep", with_header(std::string(64, '[') + std::string(64, ']'), ""), Expect::kRefused},
      {"huge-shape",
       with_header(R"({"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
                   floats),
       Expect::kRefused},
  };
}

std::string safetensors_dictionary() {
  return "\"dtype\"\n\"shape\"\n\"data_offsets\"\n\"__metadata__\"\n\"F32\"\n\"F16\"\n\"BF16\"\n"
         "\"I64\"\n\"BOOL\"\n\"{\"\n\"}\"\n\"[\"\n\"]\"\n\":\"\n\",\"\n";
}

}  // namespace ltfit::fuzz
