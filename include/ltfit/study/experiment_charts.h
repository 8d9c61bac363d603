// The experiment report's two charts as data (experiment_charts.cpp draws them with
// write_experiment_charts, experiment_report.h): what each shows, so tests can check it.
//
// total_time.png: one group per row of the plan, in its order (the study's runs and the ones
// beyond it, bf16 or channels_last off), with this machine's train + TTA minutes (hatched: a
// rehearsal's full-size estimate) beside each study platform's; a missing bar says why ("n/a",
// "crashed"); value labels read like the study's times (mm:ss; seconds under a minute).
// curves.png: training loss and the head group's LR per optimizer step of every run that wrote
// steps.csv, one line per run, whole-number step ticks. Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "ltfit/pictures/plot.h"
#include "ltfit/study/experiment_plan.h"
#include "ltfit/study/experiment_report.h"

namespace ltfit {

// total_time.png's bars; values in minutes.
BarChart total_time_chart(const ExperimentPlan& plan, const std::vector<ExperimentRow>& rows);

// curves.png's panels (loss, then LR); empty when no run wrote steps.csv.
std::vector<LineChart> curves_charts(const std::vector<ExperimentRow>& rows);

// A bar's label for `minutes`: "11:17" (mm:ss, as the study gives its times), "9.5 s" under a
// minute, so that a run that finished is never labelled 0.
std::string minutes_label(double minutes);

}  // namespace ltfit
