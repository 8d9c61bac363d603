// report.md's section on the runs killed mid-run and resumed (experiment_report.h, run_cut.h).
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ltfit/study/experiment_report.h"
#include "ltfit/util/format.h"

namespace ltfit {
namespace {

std::string resumed_from(const RunCut& cut) {
  if (!cut.resumed_epochs) return "no checkpoint yet: from zero";
  return fmt::format("epoch {}, batch {} ({} of training kept)", *cut.resumed_epochs,
                     cut.resumed_batch, format_mm_ss(cut.kept_seconds));
}

std::string cut_row(const ExperimentRow& r) {
  const RunCut& cut = *r.outcome.cut;
  const std::string status = r.outcome.status == RunStatus::kOk
                                 ? "ok"
                                 : std::string("**") + run_status_name(r.outcome.status) + "**";
  if (!cut.happened) {
    return fmt::format(
        "| {} | {} | epoch {:g} | not cut: the run ended or stopped first | — | — "
        "| — | — |\n",
        markdown_cell(r.outcome.label), status, cut.at_epoch);
  }
  const auto lost = r.time_lost_seconds();
  return fmt::format("| {} | {} | epoch {:g} | {} | {} | {} | {} | {} |\n",
                     markdown_cell(r.outcome.label), status, cut.at_epoch,
                     format_mm_ss(cut.cut_seconds), resumed_from(cut),
                     format_mm_ss(cut.resume_seconds), lost ? format_mm_ss(*lost) : "—",
                     format_mm_ss(cut.cut_seconds));
}

}  // namespace

std::string cut_section(const std::vector<ExperimentRow>& rows) {
  if (std::none_of(rows.begin(), rows.end(), [](const auto& r) { return r.outcome.cut; })) {
    return "";
  }
  std::string out =
      "## Killed and resumed\n\n"
      "A free notebook that disconnects takes its machine with it. These runs were killed with "
      "SIGKILL (no chance to write a checkpoint) at the point named, then started again with "
      "`ltfit train --resume auto`, which continues from the newest checkpoint in the run "
      "directory (one at each epoch's end and every `train.checkpoint.every_minutes`). Time lost "
      "= both attempts' wall time − the finished run's training time: the work redone since that "
      "checkpoint and a second start-up. A restart from zero, as the guide's Colab run had, loses "
      "the whole killed attempt.\n\n"
      "| run | status | killed at | killed after | resumed from | resumed attempt | time lost | "
      "a restart from zero loses |\n|---|---|---|--:|---|--:|--:|--:|\n";
  for (const auto& r : rows) {
    if (r.outcome.cut) out += cut_row(r);
  }
  return out + "\n";
}

}  // namespace ltfit
