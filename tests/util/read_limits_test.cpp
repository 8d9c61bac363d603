// default_read_limits: 64 MiB plus twice the file's size, the 64 MiB replaceable through
// LTFIT_READ_LIMIT_MIB for a trusted, unusually dense file; bad values leave the default.
#include <cstdlib>

#include <catch2/catch.hpp>

#include "ltfit/util/read_limits.h"

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

struct EnvGuard {
  explicit EnvGuard(const char* value) {
    if (value)
      ::setenv("LTFIT_READ_LIMIT_MIB", value, 1);
    else
      ::unsetenv("LTFIT_READ_LIMIT_MIB");
  }
  ~EnvGuard() { ::unsetenv("LTFIT_READ_LIMIT_MIB"); }
};

}  // namespace

TEST_CASE("read limits: 64 MiB plus twice the file, raised only by a valid LTFIT_READ_LIMIT_MIB",
          "[model][limits]") {
  {
    EnvGuard env(nullptr);
    CHECK(ltfit::default_read_limits(10 * kMiB).max_bytes == 64 * kMiB + 20 * kMiB);
  }
  {
    EnvGuard env("512");
    CHECK(ltfit::default_read_limits(10 * kMiB).max_bytes == 512 * kMiB + 20 * kMiB);
  }
  for (const char* bad : {"", "0", "-5", "12abc", "99999999999999999999"}) {
    EnvGuard env(bad);
    CHECK(ltfit::default_read_limits(0).max_bytes == 64 * kMiB);
  }
  ltfit::ReadBudget budget(ltfit::default_read_limits(0).max_bytes);
  budget.charge(64 * kMiB, "everything");
  CHECK_THROWS_WITH(budget.charge(1, "one more byte"),
                    Catch::Contains("LTFIT_READ_LIMIT_MIB") && Catch::Contains("one more byte"));
}
