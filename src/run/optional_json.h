// A std::optional as JSON: its value, or null (summary.json and timing.json's optional figures).
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

namespace ltfit {

template <typename T>
nlohmann::json optional_json(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace ltfit
