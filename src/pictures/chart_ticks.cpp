// Axis ticks (chart_ticks.h).
#include "ltfit/pictures/chart_ticks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

namespace ltfit {
namespace {

// "2.50e-04" -> "2.5e-4"; "1.000" -> "1"; "-0" -> "0".
std::string trim_number(const char* text) {
  const char* e = std::strchr(text, 'e');
  std::string mantissa(text, e ? static_cast<std::size_t>(e - text) : std::strlen(text));
  if (mantissa.find('.') != std::string::npos) {
    mantissa.erase(mantissa.find_last_not_of('0') + 1);
    if (mantissa.back() == '.') mantissa.pop_back();
  }
  if (mantissa == "-0") mantissa = "0";
  if (!e) return mantissa;
  char exponent[16];  // "e-04" -> "e-4", "e+05" -> "e5"
  std::snprintf(exponent, sizeof exponent, "e%d", std::atoi(e + 1));
  return mantissa.append(exponent);
}

std::string format_number(double v, int digits, bool exponent_form) {
  if (v == 0.0) return "0";
  char text[48];
  std::snprintf(text, sizeof text, exponent_form ? "%.*e" : "%.*f", digits, v);
  return trim_number(text);
}

// The nice step (1, 2 or 5 x 10^k) nearest `raw`.
double nice_step(double raw) {
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / magnitude;
  const double nice = norm < 1.5 ? 1.0 : norm < 3.0 ? 2.0 : norm < 7.0 ? 5.0 : 10.0;
  return nice * magnitude;
}

// 5 x 10^-3 -> "0.005"; 1 x 10^-7 -> "1e-7"; 2 x 10^1 -> "20".
std::string decade_label(int mantissa, int power) {
  if (power < -3 || power > 4) {
    char text[32];
    std::snprintf(text, sizeof text, "%de%d", mantissa, power);
    return text;
  }
  return format_number(mantissa * std::pow(10.0, power), std::max(0, -power), false);
}

}  // namespace

std::vector<std::string> tick_labels(const std::vector<double>& values) {
  double largest = 0.0, min_gap = INFINITY;
  for (std::size_t i = 0; i < values.size(); ++i) {
    largest = std::max(largest, std::abs(values[i]));
    if (i > 0) min_gap = std::min(min_gap, std::abs(values[i] - values[i - 1]));
  }
  const bool exponent_form = largest > 0.0 && (largest < 1e-3 || largest >= 1e5);
  const double tolerance = std::isfinite(min_gap) && min_gap > 0 ? 1e-3 * min_gap : 1e-9 * largest;
  std::vector<std::string> labels;
  for (int digits = 0; digits <= 15; ++digits) {
    labels.clear();
    bool ok = true;
    for (const double v : values) {
      labels.push_back(format_number(v, digits, exponent_form));
      ok = ok && std::abs(std::strtod(labels.back().c_str(), nullptr) - v) <= tolerance;
    }
    if (ok && std::set<std::string>(labels.begin(), labels.end()).size() == labels.size()) break;
  }
  return labels;
}

LinearAxis nice_linear_axis(double lo, double hi, int target, bool integer) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0.0, hi = 1.0;
  if (hi < lo) std::swap(lo, hi);
  if (hi == lo) {
    const double half = integer ? 1.0 : (lo == 0.0 ? 0.5 : std::abs(lo) * 0.1);
    lo -= half, hi += half;
  }
  LinearAxis axis;
  axis.step = nice_step((hi - lo) / std::max(1, target - 1));
  if (integer) axis.step = std::max(1.0, std::round(axis.step));
  const double first = std::floor(lo / axis.step + 1e-9);
  const double last = std::max(first + 1.0, std::ceil(hi / axis.step - 1e-9));  // 2 ticks at least
  axis.lo = first * axis.step;
  axis.hi = last * axis.step;
  std::vector<double> values;
  for (double k = first; k <= last; k += 1.0) values.push_back(k * axis.step);
  const auto labels = tick_labels(values);
  for (std::size_t i = 0; i < values.size(); ++i) axis.ticks.push_back({values[i], labels[i]});
  return axis;
}

std::vector<AxisTick> log_ticks(double lo, double hi) {
  std::vector<AxisTick> ticks;
  if (!(lo > 0.0) || !(hi > 0.0) || !std::isfinite(lo) || !std::isfinite(hi)) return ticks;
  if (hi < lo) std::swap(lo, hi);
  const double decades = std::log10(hi / lo);
  std::vector<int> mantissas = {1};
  if (decades < 3.0) mantissas = {1, 2, 5};
  if (decades < 0.7) mantissas = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const int every = decades > 12.0 ? 2 : 1;
  const int first = static_cast<int>(std::floor(std::log10(lo))) - 1;
  const int last = static_cast<int>(std::ceil(std::log10(hi))) + 1;
  for (int power = first; power <= last; ++power) {
    if (every > 1 && power % every != 0) continue;
    for (const int m : mantissas) {
      const double v = m * std::pow(10.0, power);
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9))
        ticks.push_back({v, decade_label(m, power)});
    }
  }
  return ticks;
}

}  // namespace ltfit
