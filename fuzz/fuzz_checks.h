// Invariants the fuzz targets check on what ltfit's readers return, beyond "did not crash".
//
// A reader that returns normally must return something safe to use: every tensor a torch.save
// archive yields must lie inside its storage (its first and last element are read here, so
// AddressSanitizer sees an out-of-range view), and the tree must be walkable even when the
// pickle built cycles. A broken invariant aborts, which libFuzzer reports as a crash.
#pragma once

#include "ltfit/formats/pickle.h"

namespace ltfit::fuzz {

// Prints `what` and aborts (a finding).
[[noreturn]] void invariant_failed(const char* what);

// Prints why a reader refused an input when LTFIT_FUZZ_VERBOSE is set (to see why a seed is
// refused); silent otherwise, as libFuzzer runs want.
void note_refusal(const char* message);

// Walks every value reachable from `root` once (cycles allowed) and checks each tensor's view
// against its storage, reading the view's first and last byte.
void check_tree(const pickle::PickleValue& root);

}  // namespace ltfit::fuzz
