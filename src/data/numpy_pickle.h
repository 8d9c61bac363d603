// A reader of data pickles as Python and NumPy write them: dicts, lists, strings, numbers and
// NumPy arrays (private to src/data; CIFAR's Python batches are such files).
//
// Nothing in the file is run. The pickle machine (formats/pickle.h) admits only the globals that
// rebuild these values: `numpy.core.multiarray._reconstruct` (NumPy 1) or
// `numpy._core.multiarray._reconstruct` (NumPy 2) with `numpy.ndarray` and `numpy.dtype` (every
// protocol up to 4), `numpy.core.numeric._frombuffer` / `numpy._core.numeric._frombuffer`
// (protocol 5's in-band buffers), and `_codecs.encode` / `__builtin__.bytes` / `builtins.bytes`
// (Python 3's bytes under protocol 2). Any other global is refused, as is an array of another
// dtype than bool, integers and floats, or one whose bytes are not its shape's. An array becomes a
// tensor of its shape (kTensor; C order whatever the file's), Python 2's str and Python 3's bytes
// a string of those bytes, str a UTF-8 string. Everything allocated is charged to the budget.
// Thread-safe (no shared state).
#pragma once

#include <memory>
#include <string_view>

#include "ltfit/formats/pickle.h"
#include "ltfit/util/read_limits.h"

namespace ltfit {

// Unpickles `bytes`; PickleError for a malformed or refused pickle, LimitError past `budget`.
std::unique_ptr<pickle::Unpickled> read_numpy_pickle(std::string_view bytes, ReadBudget& budget);

}  // namespace ltfit
