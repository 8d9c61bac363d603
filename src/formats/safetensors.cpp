// safetensors files (safetensors.h).
#include "ltfit/formats/safetensors.h"

#include <torch/torch.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

namespace ltfit {

namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data are little-endian");

struct SafetensorsDtype {
  const char* name;
  torch::ScalarType type;
};
constexpr SafetensorsDtype kSafetensorsDtypes[] = {
    {"F64", torch::kFloat64},   {"F32", torch::kFloat32}, {"F16", torch::kFloat16},
    {"BF16", torch::kBFloat16}, {"I64", torch::kInt64},   {"I32", torch::kInt32},
    {"I16", torch::kInt16},     {"I8", torch::kInt8},     {"U8", torch::kUInt8},
    {"BOOL", torch::kBool}};

torch::ScalarType dtype_of(const std::string& name, const std::string& tensor) {
  for (const SafetensorsDtype& d : kSafetensorsDtypes) {
    if (name == d.name) return d.type;
  }
  throw SafetensorsError("tensor '" + tensor + "': dtype '" + name +
                         "' is not supported (F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL)");
}

const char* name_of(torch::ScalarType type) {
  for (const SafetensorsDtype& d : kSafetensorsDtypes) {
    if (type == d.type) return d.name;
  }
  throw SafetensorsError(std::string("cannot write dtype ") + c10::toString(type));
}

std::uint64_t header_length(std::string_view bytes) {
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), sizeof n);
  return n;
}

// The header's JSON, bounded in depth and in values while it is parsed.
nlohmann::json parse_header(std::string_view text) {
  std::uint64_t values = 0;
  const auto bound = [&values](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > 4) throw SafetensorsError("header: JSON nested deeper than a safetensors header");
    if (++values > kMaxSafetensorsValues) {
      throw SafetensorsError("header: more than " + std::to_string(kMaxSafetensorsValues) +
                             " JSON values");
    }
    return true;
  };
  try {
    nlohmann::json header = nlohmann::json::parse(text.begin(), text.end(), bound);
    if (!header.is_object()) throw SafetensorsError("header: not a JSON object");
    return header;
  } catch (const nlohmann::json::exception& e) {
    throw SafetensorsError(std::string("header: not valid JSON (") + e.what() + ")");
  }
}

struct Entry {
  std::string name;
  torch::ScalarType type;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;
};

std::uint64_t offset_of(const nlohmann::json& value, const std::string& name) {
  if (!value.is_number_unsigned()) {
    throw SafetensorsError("tensor '" + name + "': data_offsets must be whole numbers >= 0");
  }
  return value.get<std::uint64_t>();
}

Entry entry_of(const std::string& name, const nlohmann::json& spec) {
  if (!spec.is_object() || !spec.contains("dtype") || !spec.contains("shape") ||
      !spec.contains("data_offsets") || !spec["dtype"].is_string() || !spec["shape"].is_array() ||
      !spec["data_offsets"].is_array() || spec["data_offsets"].size() != 2) {
    throw SafetensorsError("tensor '" + name +
                           "': expected {\"dtype\": ..., \"shape\": [...], \"data_offsets\": "
                           "[begin, end]}");
  }
  Entry e{name, dtype_of(spec["dtype"].get<std::string>(), name), {}, 0, 0};
  if (spec["shape"].size() > 16) throw SafetensorsError("tensor '" + name + "': over 16 dims");
  std::uint64_t elements = 1;
  for (const nlohmann::json& d : spec["shape"]) {
    if (!d.is_number_unsigned() || d.get<std::uint64_t>() > (1ull << 40)) {
      throw SafetensorsError("tensor '" + name + "': shape must hold whole numbers >= 0");
    }
    const std::uint64_t size = d.get<std::uint64_t>();
    elements = size != 0 && elements > std::numeric_limits<std::uint64_t>::max() / size
                   ? std::numeric_limits<std::uint64_t>::max()
                   : elements * size;
    e.shape.push_back(static_cast<std::int64_t>(size));
  }
  e.begin = offset_of(spec["data_offsets"][0], name);
  e.end = offset_of(spec["data_offsets"][1], name);
  const std::uint64_t item = c10::elementSize(e.type);
  if (e.end < e.begin || elements > (e.end - e.begin) / item ||
      elements * item != e.end - e.begin) {
    throw SafetensorsError("tensor '" + name + "': its shape and dtype take " +
                           (elements > std::numeric_limits<std::uint64_t>::max() / item
                                ? std::string("more bytes than any file holds")
                                : std::to_string(elements * item) + " bytes") +
                           ", its data_offsets [" + std::to_string(e.begin) + ", " +
                           std::to_string(e.end) + "] span another number");
  }
  return e;
}

std::map<std::string, std::string> metadata_of(const nlohmann::json& value) {
  if (!value.is_object()) throw SafetensorsError("header: __metadata__ must be an object");
  std::map<std::string, std::string> out;
  for (const auto& [key, text] : value.items()) {
    if (!text.is_string()) throw SafetensorsError("header: __metadata__ values must be strings");
    out[key] = text.get<std::string>();
  }
  return out;
}

}  // namespace

bool looks_like_safetensors(std::string_view bytes) {
  return bytes.size() >= 10 && header_length(bytes) >= 2 &&
         header_length(bytes) <= bytes.size() - 8 && bytes[8] == '{';
}

SafetensorsContent read_safetensors(std::string_view bytes) {
  if (bytes.size() < 8) throw SafetensorsError("shorter than the 8-byte header length");
  const std::uint64_t n = header_length(bytes);
  if (n > kMaxSafetensorsHeader) {
    throw SafetensorsError("header of " + std::to_string(n) + " bytes, over the " +
                           std::to_string(kMaxSafetensorsHeader) + " allowed");
  }
  if (n > bytes.size() - 8) {
    throw SafetensorsError("header of " + std::to_string(n) + " bytes in a file of " +
                           std::to_string(bytes.size()) + " (truncated?)");
  }
  if (n < 2 || bytes[8] != '{') throw SafetensorsError("header: does not start with '{'");
  const nlohmann::json header = parse_header(bytes.substr(8, n));
  const std::string_view data = bytes.substr(8 + n);
  SafetensorsContent out;
  std::vector<Entry> entries;
  for (const auto& [name, spec] : header.items()) {
    if (name == "__metadata__") {
      out.metadata = metadata_of(spec);
    } else {
      entries.push_back(entry_of(name, spec));
    }
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t next = 0;  // the spans tile the data: each starts where the previous ended
  for (const Entry& e : entries) {
    if (e.begin != next) {
      throw SafetensorsError("tensor '" + e.name + "': data_offsets start at " +
                             std::to_string(e.begin) + ", expected " + std::to_string(next) +
                             (e.begin < next ? " (overlapping another tensor)" : " (a gap)"));
    }
    if (e.end > data.size()) {
      throw SafetensorsError("tensor '" + e.name + "': data ends at " + std::to_string(e.end) +
                             ", past the file's " + std::to_string(data.size()) +
                             " bytes of data (truncated?)");
    }
    next = e.end;
  }
  if (next != data.size()) {
    throw SafetensorsError(std::to_string(data.size() - next) +
                           " bytes of data after the last tensor's");
  }
  for (const Entry& e : entries) {
    torch::Tensor t = torch::empty(e.shape, torch::TensorOptions().dtype(e.type));
    if (e.end > e.begin) std::memcpy(t.data_ptr(), data.data() + e.begin, e.end - e.begin);
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

std::string safetensors_bytes(const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<torch::Tensor> contiguous;
  std::uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name == "__metadata__") throw SafetensorsError("a tensor cannot be named __metadata__");
    contiguous.push_back(tensor.detach().to(torch::kCPU).contiguous());
    const std::uint64_t size = contiguous.back().nbytes();
    header[name] = {{"dtype", name_of(tensor.scalar_type())},
                    {"shape", tensor.sizes().vec()},
                    {"data_offsets", {offset, offset + size}}};
    offset += size;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const std::uint64_t n = text.size();
  std::memcpy(out.data(), &n, sizeof n);
  out += text;
  out.reserve(out.size() + offset);
  for (const torch::Tensor& t : contiguous) {
    out.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
  }
  return out;
}

}  // namespace ltfit
