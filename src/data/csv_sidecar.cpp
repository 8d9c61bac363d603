// A CSV dataset's sidecar; see csv_sidecar.h.
#include "ltfit/data/csv_sidecar.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "data/layouts.h"
#include "ltfit/util/error.h"
#include "ltfit/util/input_file.h"

namespace ltfit {

namespace fs = std::filesystem;

std::string csv_sidecar_path(const std::string& csv_path) { return csv_path + ".json"; }

std::string csv_sidecar_text(const std::string& task, const std::string& label_delim) {
  nlohmann::ordered_json doc = {{"written_by", "ltfit synth"}, {"task", task}};
  doc["label_delim"] =
      label_delim.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(label_delim);
  return doc.dump(2) + "\n";
}

std::string apply_csv_sidecar(Config& config) {
  DataConfig& data = config.data;
  const bool csv_layout = data.layout == DataLayout::kCsv || data.layout == DataLayout::kAuto;
  if (!csv_layout || config.model.task != Task::kAuto || data.csv.label_delim) return "";
  const std::string path = csv_sidecar_path(layouts::csv_file_path(data).string());
  std::error_code error;
  if (!fs::is_regular_file(path, error)) return "";
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(read_input_file(path, "CSV sidecar"));
  } catch (const nlohmann::json::exception& e) {
    throw DataError("'" + path + "' is not JSON: " + e.what(),
                    "it describes the CSV beside it (`ltfit synth` writes it); fix or remove it");
  } catch (const ConfigError& e) {
    throw DataError(e.what(), e.hint());
  }
  const auto delim = doc.is_object() ? doc.find("label_delim") : doc.end();
  if (delim == doc.end() || delim->is_null()) return "";
  if (!delim->is_string() || delim->get<std::string>().empty()) {
    throw DataError("'" + path + "': label_delim: expected null or a non-empty string",
                    "it describes the CSV beside it (`ltfit synth` writes it); fix or remove it");
  }
  data.csv.label_delim = delim->get<std::string>();
  return "data.csv.label_delim '" + *data.csv.label_delim + "' from '" + path +
         "': the labels are sets (model.task auto reads them multi-label)";
}

}  // namespace ltfit
