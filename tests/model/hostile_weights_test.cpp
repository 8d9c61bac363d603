// Hostile weight files, generated here, given to `ltfit predict --weights` (the path that
// model.pretrained takes too) in a child capped at 4 GiB of address space: each must end in exit 4
// with a message about the file, within a small peak RSS; none may crash, run anything or
// allocate what the file claims. Also the reader's views: a stride-0 view claiming gigabytes
// stays a view of its 4-byte storage.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include "ltfit/formats/torch_archive.h"
#include "ltfit/model/torch_weights.h"
#include "ltfit/util/error.h"
#include "model/archive_builders.h"

namespace {

namespace op = ltfit::testing::op;
using Catch::Contains;
using ltfit::testing::TempDir;

constexpr std::uint64_t kCap = std::uint64_t(4) << 30;  // LibTorch + CUDA libraries map ~2.5 GB
constexpr long kPeakKiB = 1200 * 1024;                  // a predict that fails early stays below

std::string image() { return (ltfit::testing::source_dir() / "tests/fixtures/rgb.bmp").string(); }

ltfit::testing::CappedRun predict_with(const TempDir& dir, const std::string& name,
                                       const std::string& bytes) {
  const auto path = dir.path() / name;
  ltfit::testing::write_file(path, bytes);
  const auto r = ltfit::testing::run_ltfit_capped(
      "predict --arch resnet18 --weights " + path.string() + " " + image(), kCap);
  UNSCOPED_INFO(name << ": exit " << r.exit_code << ", peak RSS " << r.peak_rss_kib / 1024
                     << " MiB, output:\n"
                     << r.output);
  return r;
}

// A one-float storage viewed as 1.3e9 floats with stride 0 (5.2 GB if materialised).
std::string stride0_file() {
  const std::string pkl =
      op::state_dict({{"fc.bias", op::float_tensor("0", 1, 0, {1'300'000'000}, {0})}});
  return ltfit::testing::torch_zip(pkl, {{"data/0", std::string(4, '\0')}});
}

}  // namespace

TEST_CASE("self-containing or deeply nested _rebuild_from_type_v2 exits 4, no crash",
          "[weights][model][hostile]") {
  TempDir dir;
  const std::string g = op::global("torch._tensor", "_rebuild_from_type_v2") + op::put(0) + "0" +
                        op::global("torch.nn.parameter", "Parameter") + op::put(1) + "0";
  // A list L = [f, Parameter, L, None], then f(f, Parameter, L, None): f's arguments are L again.
  const std::string self = op::kProto2 + g + "]" + op::put(2) + "(" + op::get(0) + op::get(1) +
                           op::get(2) + "Ne0" + op::get(0) + "(" + op::get(0) + op::get(1) +
                           op::get(2) + "NtR.";
  auto r = predict_with(dir, "self.pth", ltfit::testing::torch_zip(self));
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output, Contains("self.pth") && Contains("not a tuple"));
  CHECK(r.peak_rss_kib < kPeakKiB);

  // T0 = (), T(k) = (f, Parameter, T(k-1), None), 100k deep, then f(*T(100k)).
  std::string deep = op::kProto2 + g + ")" + op::put(2) + "0";
  for (int i = 0; i < 100000; ++i) {
    deep += "(" + op::get(0) + op::get(1) + op::get(2) + "Nt" + op::put(2) + "0";
  }
  deep += op::get(0) + op::get(2) + "R.";
  r = predict_with(dir, "deep.pth", ltfit::testing::torch_zip(deep));
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output, Contains("deep.pth") && Contains("nested more than"));
  CHECK(r.peak_rss_kib < kPeakKiB);
}

TEST_CASE("a stride-0 view claiming 5 GB is refused without allocating it",
          "[weights][model][hostile]") {
  TempDir dir;
  const auto r = predict_with(dir, "stride0.pth", stride0_file());
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output, Contains("stride0.pth") && !Contains("alloc"));
  CHECK(r.peak_rss_kib < kPeakKiB);

  // In-process, in a child capped at +512 MiB: the tensor is a view of its 4-byte storage.
  const std::string bytes = stride0_file();
  const int status = ltfit::testing::run_in_capped_child(
      [&] {
        const ltfit::TorchArchive archive =
            ltfit::read_torch_archive(std::string_view(bytes), ltfit::default_read_limits(1 << 10));
        const auto& value = *ltfit::pickle::find_entry(archive.root(), "fc.bias");
        const bool is_view =
            value.tensor.sizes().vec() == std::vector<std::int64_t>{1'300'000'000} &&
            value.tensor.storage().nbytes() == 4;
        return is_view ? 0 : 1;
      },
      std::uint64_t(512) << 20);
  CHECK(status == 0);
}

TEST_CASE("a flood of cheap opcodes in a small deflated data.pkl stops at the memory limit",
          "[weights][model][hostile]") {
  TempDir dir;
  const std::string pkl = op::kProto2 + std::string(30'000'000, 'N') + ".";
  const std::string bytes = ltfit::testing::torch_zip(pkl, {}, /*deflate_pickle=*/true);
  CHECK(bytes.size() < 64 * 1024);
  const auto r = predict_with(dir, "flood.pth", bytes);
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output, Contains("flood.pth") && Contains("of memory"));
  CHECK(r.peak_rss_kib < kPeakKiB);
}

TEST_CASE("a weight file with a corrupt record exits 4 naming the record",
          "[weights][model][hostile]") {
  TempDir dir;
  const auto good = dir.path() / "good.pth";
  ltfit::write_torch_state_dict(good.string(), {{"w", torch::arange(1000, torch::kFloat32)}});
  std::string bytes = ltfit::testing::read_file(good);
  const float marker = 500.0f;
  const std::size_t at = bytes.find(std::string(reinterpret_cast<const char*>(&marker), 4));
  REQUIRE(at != std::string::npos);
  bytes[at] ^= 1;
  const auto r = predict_with(dir, "crc.pth", bytes);
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output, Contains("crc.pth") && Contains("archive/data/0") && Contains("CRC-32"));
}

TEST_CASE("a TorchScript archive given as weights is refused before anything is unpickled",
          "[weights][model][hostile]") {
  TempDir dir;
  // Its data.pkl would be refused anyway; the record names alone decide.
  const std::string bytes = ltfit::testing::torch_zip(
      op::kProto2 + op::global("os", "system") + ".",
      {{"constants.pkl", op::kProto2 + ")."}, {"code/__torch__.py", "def f(): pass\n"}});
  const std::string path = (dir.path() / "model.pt").string();
  ltfit::testing::write_file(path, bytes);
  CHECK_THROWS_WITH(ltfit::read_torch_state_dict(path),
                    Contains("TorchScript") && Contains("constants.pkl") && !Contains("os.system"));
}

TEST_CASE("zip64 archives read back", "[weights][model]") {
  ltfit::TorchArchiveWriter writer;
  writer.pickle().empty_dict();
  writer.pickle().mark();
  writer.pickle().string("w");
  writer.tensor(torch::arange(10, torch::kFloat64));
  writer.pickle().set_items();
  const std::string bytes = writer.to_bytes(/*force_zip64=*/true);
  const ltfit::TorchArchive archive =
      ltfit::read_torch_archive(std::string_view(bytes), ltfit::default_read_limits(bytes.size()));
  CHECK(torch::equal(ltfit::pickle::find_entry(archive.root(), "w")->tensor,
                     torch::arange(10, torch::kFloat64)));
}
