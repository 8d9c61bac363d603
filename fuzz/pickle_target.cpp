// Fuzz target: the pickle machine (src/formats/pickle.cpp) with torch.save's allow-list and
// tensor rebuilds (src/formats/torch_archive.cpp), on archive contents (archive_input.h) packed
// into a valid zip, so mutations reach the pickle instead of failing a CRC.
//
// Expected outcomes are a std::runtime_error subclass (PickleError, LimitError, ...) or a
// c10::Error (both exit 4 through load_torch_archive), or a tree whose tensors all lie inside
// their storages (fuzz_checks.h). A crash, an ASan/UBSan report, std::bad_alloc, a logic_error
// or a run past the time or memory limit is a finding.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <c10/util/Exception.h>

#include "archive_input.h"
#include "fuzz_checks.h"
#include "ltfit/formats/torch_archive.h"
#include "targets.h"

namespace ltfit::fuzz {

Outcome run_pickle(std::string_view input) {
  auto bytes = std::make_shared<const std::string>(
      build_archive(decode_archive_input(input, kSmallRecordBytes)));
  try {
    const TorchArchive archive = read_torch_archive(bytes, default_read_limits(bytes->size()));
    check_tree(archive.root());
    return Outcome::kAccepted;
  } catch (const std::runtime_error& e) {
    note_refusal(e.what());
  } catch (const c10::Error& e) {
    note_refusal(e.what_without_backtrace());
  }
  return Outcome::kRefused;
}

}  // namespace ltfit::fuzz
