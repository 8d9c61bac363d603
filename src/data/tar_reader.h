// Tar archives as the shards layout reads them (private to src/data): the regular members'
// names and where their bytes lie, found by reading the 512-byte headers alone (a member's bytes
// are skipped, not read), and the plain ustar writer `ltfit synth --layout shards`, the tests and
// the fuzz seeds use.
//
// Read: POSIX ustar (name with its 155-byte prefix), GNU tar's long names ('L'), and pax extended
// headers ('x': path and size; 'g' ignored), as Python's tarfile, GNU tar and WebDataset's
// writers produce them; sizes in octal or GNU's base-256. Directories, links and devices are
// skipped (a link is never followed). Every header's checksum is checked; a member, long name or
// pax record past the file's end, a name over 4 KiB, a pax header over 1 MiB or more than
// kMaxTarMembers members is a DataError naming the file, so the memory taken is bounded by the
// member count, never by what a header claims. Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "data/regular_file.h"

namespace ltfit::layouts {

inline constexpr std::size_t kMaxTarMembers = 10'000'000;

struct TarMember {
  std::string name;  // as stored, a leading "./" dropped
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

// The tar at `path` opened, its size in `size`; DataError naming it when it cannot be.
FileHandle open_tar(const std::string& path, std::uint64_t* size);

// The regular members of the tar at `path`, open as `fd` (`size` bytes), in archive order.
// DataError naming it when it is malformed.
std::vector<TarMember> list_tar_members(const std::string& path, const FileHandle& fd,
                                        std::uint64_t size);

// A ustar archive of `members` (name, bytes) in order: names of at most 100 bytes, ASCII.
std::string ustar_archive(const std::vector<std::pair<std::string, std::string>>& members);

}  // namespace ltfit::layouts
