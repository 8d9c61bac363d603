// Axis ticks: nice numbers on linear axes, whole numbers on step axes, decades on log axes, and
// labels that are compact, true to their values and never repeated.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <set>

#include "ltfit/pictures/chart_ticks.h"

namespace {

std::vector<std::string> labels_of(const std::vector<ltfit::AxisTick>& ticks) {
  std::vector<std::string> labels;
  for (const auto& t : ticks) labels.push_back(t.label);
  return labels;
}

using Labels = std::vector<std::string>;

}  // namespace

TEST_CASE("linear axes tick at 1, 2 or 5 x 10^k and span the data", "[plot]") {
  // The loss panel of the old curves.png ticked 0.326, 1.02, 1.71, 2.41, 3.1.
  const auto loss = ltfit::nice_linear_axis(0.326, 3.1);
  CHECK(loss.step == Approx(0.5));
  CHECK(labels_of(loss.ticks) == Labels{"0", "0.5", "1", "1.5", "2", "2.5", "3", "3.5"});
  CHECK(loss.lo == 0.0);
  CHECK(loss.hi == Approx(3.5));
  // Its LR panel: 5.15e-06, 0.000754, 0.0015, 0.00225, 0.003.
  CHECK(labels_of(ltfit::nice_linear_axis(5.15e-6, 0.003).ticks) ==
        Labels{"0", "0.001", "0.002", "0.003"});
  CHECK(labels_of(ltfit::nice_linear_axis(5.15e-6, 0.003, 6).ticks) ==
        Labels{"0", "0.0005", "0.001", "0.0015", "0.002", "0.0025", "0.003"});
  // The old total_time.png: 0, 5.72, 11.4, 17.2, 22.9 minutes.
  CHECK(labels_of(ltfit::nice_linear_axis(0, 19.9 * 1.1).ticks) ==
        Labels{"0", "5", "10", "15", "20", "25"});
  CHECK(labels_of(ltfit::nice_linear_axis(0, 2e-5, 3).ticks) == Labels{"0", "1e-5", "2e-5"});
  CHECK(labels_of(ltfit::nice_linear_axis(0, 250000, 3).ticks) == Labels{"0", "1e5", "2e5", "3e5"});
  // A flat series still gets an axis around its value.
  const auto flat = ltfit::nice_linear_axis(0.7, 0.7);
  CHECK(flat.lo < 0.7);
  CHECK(flat.hi > 0.7);
}

TEST_CASE("step axes tick at whole numbers", "[plot]") {
  // The old curves.png ticked steps at 0, 13.2, 26.5, 39.8, 53 (and 4.25, 8.5 for 17 steps).
  CHECK(labels_of(ltfit::nice_linear_axis(0, 53, 6, true).ticks) ==
        Labels{"0", "10", "20", "30", "40", "50", "60"});
  CHECK(labels_of(ltfit::nice_linear_axis(0, 17, 6, true).ticks) ==
        Labels{"0", "5", "10", "15", "20"});
  CHECK(labels_of(ltfit::nice_linear_axis(0, 2, 6, true).ticks) == Labels{"0", "1", "2"});
  CHECK(labels_of(ltfit::nice_linear_axis(0, 0, 6, true).ticks) == Labels{"-1", "0", "1"});
}

TEST_CASE("log axes tick at decades, with 2 and 5 only over few decades", "[plot]") {
  // The old lr_find.png labelled half-decade ticks 1e-4, 1e-3, 1e-2, 1e-2, 1e-1.
  CHECK(labels_of(ltfit::log_ticks(1.3e-4, 0.2)) == Labels{"0.001", "0.01", "0.1"});
  CHECK(labels_of(ltfit::log_ticks(1e-7, 10)) ==
        Labels{"1e-7", "1e-6", "1e-5", "1e-4", "0.001", "0.01", "0.1", "1", "10"});
  CHECK(labels_of(ltfit::log_ticks(2e-3, 3e-2)) == Labels{"0.002", "0.005", "0.01", "0.02"});
  CHECK(labels_of(ltfit::log_ticks(3e-6, 1.2e-5)) ==
        Labels{"3e-6", "4e-6", "5e-6", "6e-6", "7e-6", "8e-6", "9e-6", "1e-5"});
  CHECK(labels_of(ltfit::log_ticks(1e-20, 1)).size() == 11);  // every other decade
  CHECK(ltfit::log_ticks(0, 1).empty());
}

TEST_CASE("tick labels are distinct and within a thousandth of a step of their values", "[plot]") {
  std::mt19937 rng(21);  // fixed seed: the same 2000 ranges every run
  std::uniform_real_distribution<double> exponent(-9, 9), unit(0, 1);
  for (int i = 0; i < 2000; ++i) {
    const double scale = std::pow(10.0, exponent(rng));
    const double lo = (unit(rng) - 0.5) * scale, hi = lo + (0.01 + unit(rng)) * scale;
    const bool integer = i % 3 == 0;
    const auto axis = ltfit::nice_linear_axis(lo, hi, 6, integer);
    INFO("range " << lo << " .. " << hi << (integer ? " (integer)" : ""));
    REQUIRE(axis.ticks.size() >= 2);
    CHECK(axis.lo <= lo + 1e-6 * axis.step);
    CHECK(axis.hi >= hi - 1e-6 * axis.step);
    const auto labels = labels_of(axis.ticks);
    CHECK(std::set<std::string>(labels.begin(), labels.end()).size() == labels.size());
    for (const auto& t : axis.ticks) {
      CHECK(std::abs(std::stod(t.label) - t.value) <= 1e-3 * axis.step);
      CHECK(t.label.size() <= 12);
    }
    const auto decades = ltfit::log_ticks(std::abs(lo) + 1e-30, std::abs(lo) + scale * 1e3);
    const auto log_labels = labels_of(decades);
    CHECK(std::set<std::string>(log_labels.begin(), log_labels.end()).size() == log_labels.size());
  }
}
