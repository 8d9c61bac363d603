// Precision's names (precision_name.h). Thread-safe: the table is initialised once.
#include "ltfit/util/precision_name.h"

#include "ltfit/util/choices.h"

namespace ltfit {
namespace {

const EnumNames<Precision>& precisions() {
  static const EnumNames<Precision> names{"train.precision", {"fp32", "fp16", "bf16"}};
  return names;
}

}  // namespace

Precision parse_precision(std::string_view text) { return parse_precision(text, precisions().key); }

Precision parse_precision(std::string_view text, const std::string& key) {
  return static_cast<Precision>(parse_choice(key, precisions().names, text));
}

const std::string& precision_name(Precision precision) { return precisions().name(precision); }

}  // namespace ltfit
