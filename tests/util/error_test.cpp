// The mapping of every exception to a documented exit code (describe_exception) and the
// out-of-memory error that names the batch size (rethrow_naming_batch_size): LibTorch's
// allocator errors, std::bad_alloc, std::filesystem errors, ltfit's own errors and anything else.
#include "ltfit/util/error.h"

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include <cerrno>
#include <filesystem>
#include <new>
#include <system_error>

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using ltfit::ExitCode;

namespace {

template <typename Throw>
std::exception_ptr caught(Throw&& do_throw) {
  try {
    do_throw();
  } catch (...) {
    return std::current_exception();
  }
  FAIL("nothing was thrown");
  return nullptr;
}

// What LibTorch's CPU allocator throws when the memory asked for is not there: 1 PiB is more
// than a 47-bit address space holds, so nothing is allocated.
std::exception_ptr cpu_allocator_failure() {
  return caught([] { (void)torch::empty({std::int64_t{1} << 50}, torch::kUInt8); });
}

std::exception_ptr cuda_out_of_memory() {
  return caught([] {
    TORCH_CHECK_WITH(OutOfMemoryError, false,
                     "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
                     "of 79.10 GiB of which 1.12 GiB is free.");
  });
}

std::exception_ptr c10_error(const std::string& message) {
  return caught([&] { TORCH_CHECK(false, message); });
}

// rethrow_naming_batch_size(batch_size) applied to `e`, as the commands do.
std::exception_ptr named(const std::exception_ptr& e, int batch_size) {
  return caught([&] {
    try {
      std::rethrow_exception(e);
    } catch (...) {
      ltfit::rethrow_naming_batch_size(batch_size);
    }
  });
}

void check_out_of_memory(const ltfit::ErrorReport& report) {
  INFO(report.message << "\nHINT: " << report.hint);
  CHECK(report.code == ExitCode::kRuntime);
  CHECK_THAT(report.message, StartsWith("out of memory"));
  CHECK_THAT(report.message, !Contains("internal error"));
  CHECK_THAT(report.hint, Contains("data.batch_size") && Contains("ltfit find-batch"));
}

}  // namespace

TEST_CASE("out of memory from LibTorch and the C++ runtime: exit 5 with the find-batch hint",
          "[util][exit_codes]") {
  SECTION("LibTorch's CPU allocator (a c10::Error saying it cannot allocate)") {
    const auto e = cpu_allocator_failure();
    check_out_of_memory(ltfit::describe_exception(e));
    CHECK_THAT(ltfit::describe_exception(e).message, Contains("can't allocate memory"));
  }
  SECTION("CUDA: c10::OutOfMemoryError") {
    check_out_of_memory(ltfit::describe_exception(cuda_out_of_memory()));
  }
  SECTION("CUDA, cuBLAS and cuDNN errors that say so") {
    check_out_of_memory(ltfit::describe_exception(c10_error("CUDA error: out of memory")));
    check_out_of_memory(ltfit::describe_exception(
        c10_error("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`")));
  }
  SECTION("std::bad_alloc") {
    check_out_of_memory(ltfit::describe_exception(caught([] { throw std::bad_alloc(); })));
  }
}

TEST_CASE("rethrow_naming_batch_size: an out-of-memory error names data.batch_size",
          "[util][exit_codes]") {
  for (const auto& oom :
       {cpu_allocator_failure(), cuda_out_of_memory(), caught([] { throw std::bad_alloc(); })}) {
    const auto e = named(oom, 64);
    try {
      std::rethrow_exception(e);
    } catch (const ltfit::OutOfMemoryError& error) {
      CHECK(error.batch_size() == 64);
      CHECK(error.exit_code() == ExitCode::kRuntime);
      CHECK_THAT(error.what(), StartsWith("out of memory at data.batch_size 64: "));
      CHECK_THAT(error.hint(), Contains("--set data.batch_size=32"));
      CHECK_THAT(error.hint(), Contains("ltfit find-batch"));
    } catch (...) {
      FAIL("not an ltfit::OutOfMemoryError");
    }
    const auto report = ltfit::describe_exception(e);
    CHECK(report.code == ExitCode::kRuntime);
    CHECK_THAT(report.message, Contains("data.batch_size 64"));
  }
  // At the smallest batch the hint points elsewhere.
  const auto at_two = ltfit::describe_exception(named(cuda_out_of_memory(), 2));
  CHECK_THAT(at_two.hint, Contains("already the minimum") && Contains("data.image_size"));
}

TEST_CASE("rethrow_naming_batch_size leaves other errors as they are", "[util][exit_codes]") {
  const auto config = named(caught([] { throw ltfit::ConfigError("bad key", "fix it"); }), 64);
  CHECK_THROWS_AS(std::rethrow_exception(config), ltfit::ConfigError);
  CHECK(ltfit::describe_exception(config).code == ExitCode::kUsage);
  const auto shape = named(c10_error("mat1 and mat2 shapes cannot be multiplied"), 64);
  CHECK_THROWS_AS(std::rethrow_exception(shape), c10::Error);
  CHECK_THROWS_AS(std::rethrow_exception(named(caught([] { throw 42; }), 64)), int);
}

TEST_CASE("std::filesystem errors: exit 5 naming the path(s) and what to check",
          "[util][exit_codes]") {
  SECTION("a real one: a file where a folder should be") {
    const auto report =
        ltfit::describe_exception(caught([] { fs::create_directories("/dev/null/sub/dir"); }));
    INFO(report.message);
    CHECK(report.code == ExitCode::kRuntime);
    CHECK_THAT(report.message, StartsWith("file system error on '/dev/null/sub"));
    CHECK_THAT(report.message, Contains("Not a directory"));
    CHECK_THAT(report.message, !Contains("["));  // the paths are named once, quoted
    CHECK_THAT(report.hint, Contains("each of its parents is a folder"));
  }
  SECTION("two paths, full disk") {
    const auto report = ltfit::describe_exception(caught([] {
      throw fs::filesystem_error("cannot copy", "/runs/a/x.ckpt", "/backup/x.ckpt",
                                 std::error_code(ENOSPC, std::generic_category()));
    }));
    CHECK(report.code == ExitCode::kRuntime);
    CHECK(report.message ==
          "file system error on '/runs/a/x.ckpt' and '/backup/x.ckpt': cannot copy: " +
              std::error_code(ENOSPC, std::generic_category()).message());
    CHECK_THAT(report.hint, Contains("free space"));
  }
  SECTION("permissions, a name too long") {
    const auto denied = ltfit::describe_exception(caught([] {
      throw fs::filesystem_error("cannot create directory", "/srv/runs",
                                 std::error_code(EACCES, std::generic_category()));
    }));
    CHECK_THAT(denied.message, StartsWith("file system error on '/srv/runs': "));
    CHECK_THAT(denied.hint, Contains("permissions"));
    const auto long_name = ltfit::describe_exception(caught([] {
      throw fs::filesystem_error("status", std::string(300, 'n'),
                                 std::error_code(ENAMETOOLONG, std::generic_category()));
    }));
    CHECK_THAT(long_name.hint, Contains("shorter name"));
  }
}

TEST_CASE("every other exception maps to a documented code, never 1", "[util][exit_codes]") {
  SECTION("ltfit's own errors keep their code, message and hint") {
    const auto data = ltfit::describe_exception(
        caught([] { throw ltfit::DataError("no images under /d", "check data.root"); }));
    CHECK(data.code == ExitCode::kData);
    CHECK(data.message == "no images under /d");
    CHECK(data.hint == "check data.root");
    CHECK(ltfit::describe_exception(caught([] { throw ltfit::InterruptedError("stop"); })).code ==
          ExitCode::kInterrupted);
    CHECK(ltfit::describe_exception(caught([] { throw ltfit::CheckpointError("bad"); })).code ==
          ExitCode::kCheckpoint);
  }
  SECTION("a LibTorch error that is not about memory: an internal error without backtrace") {
    const auto report =
        ltfit::describe_exception(c10_error("mat1 and mat2 shapes cannot be multiplied"));
    CHECK(report.code == ExitCode::kRuntime);
    CHECK_THAT(report.message, StartsWith("internal error (LibTorch): ") &&
                                   Contains("mat1 and mat2 shapes cannot be multiplied"));
    CHECK_THAT(report.message, !Contains("Exception raised from"));  // the backtrace
    CHECK_THAT(report.hint, Contains("please report"));
  }
  SECTION("other standard exceptions, non-standard ones, none") {
    const auto logic = ltfit::describe_exception(caught([] { LTFIT_CHECK(1 == 2, "sums"); }));
    CHECK(logic.code == ExitCode::kRuntime);
    CHECK_THAT(logic.message, StartsWith("internal error: "));
    CHECK(ltfit::describe_exception(caught([] { throw 42; })).code == ExitCode::kRuntime);
    CHECK(ltfit::describe_exception(nullptr).code == ExitCode::kRuntime);
  }
}
