// The Python version's files as Python 2's cPickle.dump(d, f, 2) wrote CIFAR's (cifar_records.h):
// keys and names as byte strings, the records as numpy.core.multiarray._reconstruct's N×3072
// uint8 array. For `ltfit synth`, the tests and the fuzz seeds. Pure functions, thread-safe.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "data/cifar_records.h"
#include "ltfit/formats/pickle.h"

namespace ltfit::layouts::cifar {

namespace {

void pickle_int_list(pickle::PickleWriter& w, const std::vector<std::int64_t>& values) {
  w.empty_list();
  w.mark();
  for (std::int64_t v : values) w.integer(v);
  w.appends();
}

void pickle_name_list(pickle::PickleWriter& w, const std::vector<std::string>& names) {
  w.empty_list();
  w.mark();
  for (const std::string& name : names) w.byte_string(name);
  w.appends();
}

// numpy.core.multiarray._reconstruct(ndarray, (0,), 'b') with the state of an N×3072 uint8 array.
void pickle_uint8_rows(pickle::PickleWriter& w, std::size_t rows, const std::string& bytes) {
  w.global("numpy.core.multiarray", "_reconstruct");
  w.mark();
  w.global("numpy", "ndarray");
  w.mark();
  w.integer(0);
  w.tuple();
  w.byte_string("b");
  w.tuple();
  w.reduce();
  w.mark();
  w.integer(1);
  w.mark();
  w.integer(static_cast<std::int64_t>(rows));
  w.integer(static_cast<std::int64_t>(bytes.size() / std::max<std::size_t>(rows, 1)));
  w.tuple();
  w.global("numpy", "dtype");
  w.mark();
  w.byte_string("u1");
  w.integer(0);
  w.integer(1);
  w.tuple();
  w.reduce();
  w.mark();
  w.integer(3);
  w.byte_string("|");
  w.none();
  w.none();
  w.none();
  w.integer(-1);
  w.integer(-1);
  w.integer(0);
  w.tuple();
  w.build();
  w.boolean(false);
  w.byte_string(bytes);
  w.tuple();
  w.build();
}

}  // namespace

std::string python_batch_pickle(const std::vector<std::int64_t>& labels, const std::string& planes,
                                const std::vector<std::string>& files, bool hundred,
                                const std::string& batch_label) {
  pickle::PickleWriter w;
  w.empty_dict();
  w.mark();
  w.byte_string("batch_label");
  w.byte_string(batch_label);
  for (const char* key : hundred ? std::vector<const char*>{"fine_labels", "coarse_labels"}
                                 : std::vector<const char*>{"labels"}) {
    w.byte_string(key);
    pickle_int_list(w, labels);
  }
  w.byte_string("data");
  pickle_uint8_rows(w, labels.size(), planes);
  w.byte_string("filenames");
  pickle_name_list(w, files);
  w.set_items();
  return w.finish();
}

std::string python_meta_pickle(const std::vector<std::string>& names,
                               const std::vector<std::string>& coarse_names, bool hundred) {
  pickle::PickleWriter w;
  w.empty_dict();
  w.mark();
  if (hundred) {
    w.byte_string("fine_label_names");
    pickle_name_list(w, names);
    w.byte_string("coarse_label_names");
    pickle_name_list(w, coarse_names);
  } else {
    w.byte_string("num_cases_per_batch");
    w.integer(10000);
    w.byte_string("label_names");
    pickle_name_list(w, names);
    w.byte_string("num_vis");
    w.integer(3072);
  }
  w.set_items();
  return w.finish();
}

}  // namespace ltfit::layouts::cifar
