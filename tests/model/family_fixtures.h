// Shared by the family tests (convnext_test, efficientnet_test): a family's registry row by name,
// and one 1000-class linear-head model per arch for the whole test run (the big ones take a while
// to build).
#pragma once

#include <catch2/catch.hpp>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "ltfit/model/arch_registry.h"

namespace ltfit::testing {

// The row of `arch` among `rows` (a family's `<family>_archs()`); fails the test if absent.
inline const ArchInfo& family_row(const std::vector<ArchInfo>& rows, const std::string& arch) {
  for (const auto& info : rows) {
    if (info.name == arch) return info;
  }
  FAIL("no registry row " << arch);
  throw std::logic_error("unreachable");
}

// `row`'s model with torchvision's 1000-class classifier, built once per arch.
inline Classifier& cached_linear_model(const ArchInfo& row) {
  static std::map<std::string, Classifier> models;
  auto it = models.find(row.name);
  if (it == models.end()) {
    it = models.emplace(row.name, row.make(1000, HeadKind::kLinear, 0.5)).first;
  }
  return it->second;
}

}  // namespace ltfit::testing
