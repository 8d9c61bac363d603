// Shared by the family tests (convnext_test, efficientnet_test, ...): a family's registry row by
// name, one 1000-class linear-head model per arch for the whole test run (the big ones take a
// while to build), and the check that layer groups partition the parameters.
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

// `net`'s three layer groups (layer_group_parameters), after checking that none is empty and
// that together they hold each of its parameters exactly once.
inline std::vector<std::vector<torch::Tensor>> checked_layer_groups(ClassifierImpl& net) {
  auto groups = net.layer_group_parameters();
  REQUIRE(groups.size() == 3);
  std::map<const void*, int> seen;
  for (const auto& group : groups) {
    CHECK_FALSE(group.empty());
    for (const auto& t : group) ++seen[t.unsafeGetTensorImpl()];
  }
  const auto named = net.named_parameters();
  CHECK(seen.size() == named.size());
  for (const auto& p : named) {
    INFO(p.key());
    CHECK(seen[p.value().unsafeGetTensorImpl()] == 1);
  }
  return groups;
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
