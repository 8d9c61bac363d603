// JSON documents with escaped strings; see json.h.
#include "ltfit/util/json.h"

#include <nlohmann/json.hpp>

#include "ltfit/util/utf8.h"

namespace ltfit {
namespace {

template <typename Json>
Json escaped(const Json& in) {
  if (in.is_string()) return Json(escape_utf8(in.template get_ref<const std::string&>()));
  if (in.is_array()) {
    Json out = Json::array();
    for (const auto& item : in) out.push_back(escaped(item));
    return out;
  }
  if (in.is_object()) {
    Json out = Json::object();
    for (auto it = in.begin(); it != in.end(); ++it) out[escape_utf8(it.key())] = escaped(*it);
    return out;
  }
  return in;
}

}  // namespace

std::string dump_json(const nlohmann::json& document, int indent) {
  return escaped(document).dump(indent);
}

std::string dump_json(const nlohmann::ordered_json& document, int indent) {
  return escaped(document).dump(indent);
}

std::string unescape_json_string(const std::string& text) {
  return unescape_utf8(text).value_or(text);
}

}  // namespace ltfit
