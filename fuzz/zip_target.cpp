// Fuzz target: the zip reader of torch.save archives (src/formats/zip_archive.h) on raw bytes,
// then the whole archive reader (TorchScript refusal, record prefix, data.pkl) on the same bytes.
//
// Expected outcomes are a ZipError or LimitError (malformed or over the budget) or records whose
// sizes match their entries; anything else (a crash, an ASan report, std::bad_alloc, another
// exception) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <c10/util/Exception.h>

#include "formats/zip_archive.h"
#include "fuzz_checks.h"
#include "ltfit/formats/torch_archive.h"
#include "ltfit/util/read_limits.h"
#include "targets.h"

namespace ltfit::fuzz {

Outcome run_zip(std::string_view bytes) {
  const std::size_t size = bytes.size();
  Outcome outcome = Outcome::kAccepted;
  try {
    ReadBudget budget(default_read_limits(size).max_bytes);
    const zip::ZipReader zip(bytes, budget);
    for (const zip::ZipEntry& entry : zip.entries()) {
      if (zip.find(entry.name) == nullptr) invariant_failed("an entry cannot be found");
      const zip::ZipRecord record = zip.read(entry);
      if (record.bytes.size() != entry.uncompressed_size) {
        invariant_failed("a record's size differs from its entry's");
      }
      if (!record.inflated && (record.bytes.data() < bytes.data() ||
                               record.bytes.data() + record.bytes.size() > bytes.data() + size)) {
        invariant_failed("a STORED record lies outside the archive");
      }
      unsigned sum = 0;  // touch every byte (ASan)
      for (char c : record.bytes) sum += static_cast<unsigned char>(c);
      (void)sum;
    }
  } catch (const zip::ZipError& e) {
    note_refusal(e.what());
    outcome = Outcome::kRefused;
  } catch (const LimitError& e) {
    note_refusal(e.what());
    outcome = Outcome::kRefused;
  }
  try {
    const TorchArchive archive = read_torch_archive(bytes, default_read_limits(size));
    check_tree(archive.root());
  } catch (const std::runtime_error& e) {
    note_refusal(e.what());  // ZipError, PickleError, LimitError, TorchScript
  } catch (const c10::Error& e) {
    note_refusal(e.what_without_backtrace());  // load_torch_archive maps these to exit 4 as well
  }
  return outcome;  // of the zip reader: the archive reader refuses most zips, which is fine
}

}  // namespace ltfit::fuzz
