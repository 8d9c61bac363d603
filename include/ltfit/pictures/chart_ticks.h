// Axis ticks for the charts (plot.h): "nice numbers" (1, 2, 5 x 10^k) on linear axes, whole
// numbers on step or epoch axes, decades (plus 2 and 5 when the axis spans few decades) on
// logarithmic ones, each labelled compactly and never two ticks with the same label. Pure
// functions; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace ltfit {

struct AxisTick {
  double value = 0.0;  // in data units
  std::string label;   // as drawn: "0.5", "1e-4", "12"
};

// The ticks of a linear axis and the range they span: `lo`..`hi` widened to whole steps.
struct LinearAxis {
  double lo = 0.0, hi = 1.0;    // the axis range, multiples of `step`
  double step = 1.0;            // 1, 2 or 5 x 10^k (whole numbers for an integer axis)
  std::vector<AxisTick> ticks;  // lo, lo + step, ..., hi
};

// About `target` ticks covering [lo, hi] (lo == hi widens to a unit around it). `integer`: the
// step is a whole number (>= 1), for axes counting steps or epochs.
LinearAxis nice_linear_axis(double lo, double hi, int target = 5, bool integer = false);

// The ticks of a log axis inside [lo, hi] (both > 0): 10^k, also 2 and 5 x 10^k when the range
// spans under three decades, every other decade when it spans more than twelve.
std::vector<AxisTick> log_ticks(double lo, double hi);

// Labels for the ticks of a linear axis: the fewest digits that keep them distinct and true to
// their values, in one style for the axis (exponent form when every value is under 1e-3 or one
// is 1e5 or more): {0, 0.5, 1} -> "0", "0.5", "1"; {2e-5, 4e-5} -> "2e-5", "4e-5".
std::vector<std::string> tick_labels(const std::vector<double>& values);

}  // namespace ltfit
