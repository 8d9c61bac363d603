// What a CSV dataset says about how to read it, so that data written by `ltfit synth` trains as
// what it is without extra keys.
//
// `ltfit synth --layout csv --task shapes` writes, beside labels.csv, labels.csv.json:
//   {"written_by": "ltfit synth", "task": "shapes", "label_delim": " "}
// (the two-class tasks need none: their labels are single words). A label cell alone cannot say
// whether "circle square" is one class or two (a Stanford Dogs class is "golden retriever"), and
// fastai's from_csv reads single labels unless told label_delim; the sidecar tells. A sidecar
// with "label_delim": null says the labels are single. Thread-safe.
#pragma once

#include <string>

#include "ltfit/config/config.h"

namespace ltfit {

// The sidecar of the CSV file `csv_path`: csv_path + ".json".
std::string csv_sidecar_path(const std::string& csv_path);

// The sidecar's text for a CSV whose label cells are split on `label_delim` ("" for single
// labels).
std::string csv_sidecar_text(const std::string& task, const std::string& label_delim);

// Sets data.csv.label_delim from the sidecar of data.csv.file when the config leaves it to the
// data: model.task auto, data.csv.label_delim null, data.layout csv or auto, and the sidecar
// gives a delimiter. Returns a line saying what it set, or "" when it set nothing (no sidecar
// is the common case). Throws DataError naming the sidecar when it is not such a JSON document.
std::string apply_csv_sidecar(Config& config);

}  // namespace ltfit
