// Reading the runs' directories into results rows, results.csv, and writing the whole report
// (experiment_report.h).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ltfit/config/config_loader.h"
#include "ltfit/data/csv_table.h"
#include "ltfit/study/experiment_report.h"
#include "ltfit/util/atomic_file.h"
#include "ltfit/util/error.h"
#include "ltfit/util/format.h"
#include "ltfit/util/utf8.h"

namespace ltfit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<json> read_json(const fs::path& path) {
  const auto text = read_text(path);
  if (!text) return std::nullopt;
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

template <typename T>
std::optional<T> field(const json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<T>();
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream stream(line);
  std::string cell;
  while (std::getline(stream, cell, ',')) cells.push_back(cell);
  return cells;
}

// The mean of epochs.csv's images_per_second column, or null.
std::optional<double> mean_images_per_second(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  const auto header = split_csv_line(line);
  const auto column = std::find(header.begin(), header.end(), "images_per_second") - header.begin();
  double sum = 0;
  int count = 0;
  while (std::getline(in, line)) {
    const auto cells = split_csv_line(line);
    if (static_cast<std::size_t>(column) >= cells.size()) continue;
    try {
      sum += std::stod(cells[static_cast<std::size_t>(column)]);
      ++count;
    } catch (const std::exception&) {  // a torn last line: skip it
    }
  }
  if (count == 0) return std::nullopt;
  return sum / count;
}

// The run's own config.yaml when it wrote one, else the config resolved before spawning.
std::optional<Config> run_config(const RunOutcome& outcome) {
  const fs::path path = fs::path(outcome.run_dir) / "config.yaml";
  if (!outcome.run_dir.empty() && fs::exists(path)) {
    try {
      return load_config(path.string());
    } catch (const ConfigError&) {
    }
  }
  return outcome.config;
}

void read_summary(const fs::path& dir, ExperimentRow& row) {
  const auto summary = read_json(dir / "summary.json");
  if (!summary) return;
  row.train_seconds = field<double>(*summary, "train_seconds");
  row.tta_seconds = field<double>(*summary, "tta_seconds");
  row.total_seconds = field<double>(*summary, "total_seconds");
  row.accuracy = field<double>(*summary, "accuracy");
  row.tta_accuracy = field<double>(*summary, "tta_accuracy");
  row.train_images = field<std::int64_t>(*summary, "train_images").value_or(0);
  row.valid_images = field<std::int64_t>(*summary, "valid_images").value_or(0);
  row.world_size = field<int>(*summary, "world_size");
}

// A cell escaped like every name ltfit writes (util/utf8.h), quoted when needed.
std::string csv_cell(const std::string& raw) { return csv_quote(escape_utf8(raw)); }

template <typename T>
std::string csv_number(const std::optional<T>& value) {
  if (!value) return "";
  std::ostringstream text;
  text.precision(10);
  text << *value;
  return text.str();
}

std::string positive(int value) { return value > 0 ? std::to_string(value) : ""; }

// The plan's `gpus:` as written, `all` with what it resolved to: "2", "all (8)"; "" for none.
std::string gpus_cell(const RunOutcome& o) {
  if (!o.gpus.all) return o.gpus.text();
  return "all (" + std::to_string(o.machine_gpus) + ")";
}

// A field of the run's cut; null for a run without kill_at_epoch.
std::optional<double> cut_field(const RunOutcome& o, double RunCut::*field) {
  if (!o.cut) return std::nullopt;
  return (*o.cut).*field;
}

// The same, null also when the cut did not happen.
std::optional<double> cut_happened(const RunOutcome& o, double RunCut::*field) {
  if (!o.cut || !o.cut->happened) return std::nullopt;
  return (*o.cut).*field;
}

}  // namespace

std::optional<double> ExperimentRow::time_lost_seconds() const {
  if (!outcome.cut) return std::nullopt;
  return outcome.cut->time_lost(train_seconds);
}

std::optional<double> ExperimentRow::estimated_total_seconds() const {
  if (!total_seconds || subset >= 1.0 || subset <= 0.0) return std::nullopt;
  return *total_seconds / subset;
}

ExperimentRow read_experiment_row(const RunOutcome& outcome) {
  ExperimentRow row;
  row.outcome = outcome;
  row.outcome.config = run_config(outcome);
  if (const auto& config = row.outcome.config) {
    row.epochs = config->train.epochs;
    row.batch_size = config->data.batch_size;
    row.precision = precision_name(config->train.precision);
    row.channels_last = config->train.channels_last;
    row.subset = config->data.subset;
  }
  if (outcome.run_dir.empty()) return row;
  const fs::path dir(outcome.run_dir);
  read_summary(dir, row);
  row.images_per_second = mean_images_per_second(dir / "epochs.csv");
  if (const auto timing = read_json(dir / "timing.json")) {
    row.peak_rss_bytes = field<std::int64_t>(*timing, "peak_rss_bytes");
    row.peak_gpu_bytes = field<std::int64_t>(*timing, "peak_gpu_bytes");
  }
  return row;
}

std::string results_csv(const std::vector<ExperimentRow>& rows) {
  std::string text =
      "id,label,status,reason,epochs,batch_size,precision,channels_last,train_seconds,"
      "tta_seconds,total_seconds,images_per_second,accuracy,tta_accuracy,peak_rss,peak_gpu,"
      "run_dir,subset,estimated_total_seconds,gpus,world_size,kill_at_epoch,killed_after_seconds,"
      "time_lost_seconds\n";
  for (const auto& r : rows) {
    const RunOutcome& o = r.outcome;
    const std::string channels_last = r.channels_last ? (*r.channels_last ? "true" : "false") : "";
    const std::vector<std::string> cells = {o.id,
                                            o.label,
                                            run_status_name(o.status),
                                            o.reason,
                                            positive(r.epochs),
                                            positive(r.batch_size),
                                            r.precision,
                                            channels_last,
                                            csv_number(r.train_seconds),
                                            csv_number(r.tta_seconds),
                                            csv_number(r.total_seconds),
                                            csv_number(r.images_per_second),
                                            csv_number(r.accuracy),
                                            csv_number(r.tta_accuracy),
                                            csv_number(r.peak_rss_bytes),
                                            csv_number(r.peak_gpu_bytes),
                                            o.status == RunStatus::kNotApplicable ? "" : o.run_dir,
                                            csv_number(std::optional<double>(r.subset)),
                                            csv_number(r.estimated_total_seconds()),
                                            gpus_cell(o),
                                            csv_number(r.world_size),
                                            csv_number(cut_field(o, &RunCut::at_epoch)),
                                            csv_number(cut_happened(o, &RunCut::cut_seconds)),
                                            csv_number(r.time_lost_seconds())};
    for (std::size_t i = 0; i < cells.size(); ++i) text += (i ? "," : "") + csv_cell(cells[i]);
    text += "\n";
  }
  return text;
}

std::vector<ExperimentRow> write_experiment_report(const std::string& out_dir,
                                                   const ExperimentPlan& plan,
                                                   const std::vector<RunOutcome>& outcomes,
                                                   const ReportContext& context) {
  std::vector<ExperimentRow> rows;
  for (const auto& outcome : outcomes) rows.push_back(read_experiment_row(outcome));
  std::error_code error;
  fs::create_directories(out_dir, error);
  const fs::path dir(out_dir);
  write_text_atomic((dir / "results.csv").string(), results_csv(rows));
  write_text_atomic((dir / "report.md").string(), experiment_report_markdown(plan, rows, context));
  write_experiment_charts(out_dir, plan, rows);
  return rows;
}

}  // namespace ltfit
