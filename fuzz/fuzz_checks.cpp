#include "fuzz_checks.h"

#include <cstdio>
#include <cstdlib>
#include <unordered_set>
#include <vector>

#include <torch/types.h>

namespace ltfit::fuzz {

namespace {

using Kind = pickle::PickleValue::Kind;

void check_tensor(const torch::Tensor& t) {
  if (!t.defined()) invariant_failed("a tensor or storage value holds no tensor");
  if (t.numel() == 0) return;
  const auto item = static_cast<std::int64_t>(t.element_size());
  std::int64_t last = t.storage_offset();
  for (std::int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
  const auto nbytes = static_cast<std::int64_t>(t.storage().nbytes());
  if (t.storage_offset() < 0 || (last + 1) * item > nbytes) {
    invariant_failed("a tensor view reaches past the end of its storage");
  }
  const auto* base = static_cast<const volatile unsigned char*>(t.storage().data());
  if (base == nullptr) invariant_failed("a non-empty tensor without data");
  unsigned sink = base[t.storage_offset() * item];
  sink += base[(last + 1) * item - 1];
  (void)sink;
}

}  // namespace

void invariant_failed(const char* what) {
  std::fprintf(stderr, "ltfit fuzz invariant broken: %s\n", what);
  std::abort();
}

void note_refusal(const char* message) {
  static const bool verbose = std::getenv("LTFIT_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "refused: %s\n", message);
}

void check_tree(const pickle::PickleValue& root) {
  std::unordered_set<const pickle::PickleValue*> seen;
  std::vector<const pickle::PickleValue*> todo = {&root};
  while (!todo.empty()) {
    const pickle::PickleValue* v = todo.back();
    todo.pop_back();
    if (v == nullptr) invariant_failed("a null value in the unpickled tree");
    if (!seen.insert(v).second) continue;
    switch (v->kind) {
      case Kind::kTuple:
      case Kind::kList:
      case Kind::kObject:
        for (const auto& item : v->items) todo.push_back(item.get());
        break;
      case Kind::kDict:
        for (const auto& [key, value] : v->entries) {
          todo.push_back(key.get());
          todo.push_back(value.get());
        }
        break;
      case Kind::kStorage:
      case Kind::kTensor:
        check_tensor(v->tensor);
        break;
      default:
        break;
    }
  }
}

}  // namespace ltfit::fuzz
