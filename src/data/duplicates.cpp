// Fingerprints and duplicate groups: see duplicates.h.
#include "ltfit/data/duplicates.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <system_error>
#include <thread>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "data/decode.h"
#include "data/regular_file.h"
#include "ltfit/util/sha256.h"

namespace ltfit {

namespace {

constexpr int kPhashInput = 32;  // side of the grey image the DCT runs on
constexpr int kPhashSide = 8;    // the 8x8 lowest frequencies kept
constexpr double kPhashPi = 3.14159265358979323846;
// A JPEG is decoded at 1/2, 1/4 or 1/8 scale when its shorter side stays >= this: libjpeg's
// scaled IDCT is itself a low-pass filter, and the 32x32 resize that follows removes the rest.
constexpr double kPhashMinDecodeSide = 128;

// cos(pi * u * (2x + 1) / 64) for the 8 frequencies u and the 32 positions x (DCT-II basis).
const std::array<double, kPhashSide * kPhashInput>& dct_basis() {
  static const auto basis = [] {
    std::array<double, kPhashSide * kPhashInput> b{};
    for (int u = 0; u < kPhashSide; ++u) {
      for (int x = 0; x < kPhashInput; ++x) {
        b[u * kPhashInput + x] = std::cos(kPhashPi * u * (2 * x + 1) / (2.0 * kPhashInput));
      }
    }
    return b;
  }();
  return basis;
}

// pHash bits of a 32x32 grey image (row-major doubles): the 8x8 low frequencies against their
// median (NumPy's: the mean of the two middle values).
std::uint64_t phash_bits(const double* image) {
  const auto& basis = dct_basis();
  std::array<double, kPhashSide * kPhashInput> rows{};  // DCT along y: [u][x]
  for (int u = 0; u < kPhashSide; ++u) {
    for (int x = 0; x < kPhashInput; ++x) {
      double s = 0;
      for (int y = 0; y < kPhashInput; ++y) s += basis[u * kPhashInput + y] * image[y * 32 + x];
      rows[u * kPhashInput + x] = s;
    }
  }
  std::array<double, kPhashSide * kPhashSide> low{};  // then along x: [u][v]
  for (int u = 0; u < kPhashSide; ++u) {
    for (int v = 0; v < kPhashSide; ++v) {
      double s = 0;
      for (int x = 0; x < kPhashInput; ++x) s += basis[v * kPhashInput + x] * rows[u * 32 + x];
      low[u * kPhashSide + v] = s;
    }
  }
  std::array<double, kPhashSide* kPhashSide> sorted = low;
  std::sort(sorted.begin(), sorted.end());
  const double median = (sorted[31] + sorted[32]) / 2;
  std::uint64_t bits = 0;
  for (int i = 0; i < kPhashSide * kPhashSide; ++i) bits = bits << 1 | (low[i] > median ? 1 : 0);
  return bits;
}

std::uint64_t phash_of_bgr(const cv::Mat& bgr) {
  cv::Mat gray;
  cv::cvtColor(bgr, gray, cv::COLOR_BGR2GRAY);
  return phash_of_gray(gray.data, gray.rows, gray.cols);
}

// The sha256 of a regular file; "" (and `error` set) for anything else, never opening a FIFO.
std::string content_hash(const std::string& path, std::string* error) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    *error = "not a regular file";
    return "";
  }
  try {
    return sha256_file(path);
  } catch (const std::exception& e) {
    *error = e.what();
    return "";
  }
}

// The SHA-256 of a member's bytes inside its file (a tar shard's); at most 1 GiB, as an image file.
std::string member_hash(const FileRange& member, std::string* error) {
  std::uint64_t size = 0;
  const FileHandle fd(open_regular_file(*member.file, &size, error));
  if (fd.get() < 0) return "";
  if (member.offset > size || member.size > size - member.offset) {
    *error = "its bytes lie past the end of '" + *member.file + "'";
    return "";
  }
  if (member.size > (std::uint64_t{1} << 30)) {
    *error = "file too large (" + std::to_string(member.size) + " bytes)";
    return "";
  }
  std::string bytes(static_cast<std::size_t>(member.size), '\0');
  if (read_at(fd.get(), *member.file, member.offset, bytes.size(),
              reinterpret_cast<std::uint8_t*>(bytes.data())) != bytes.size()) {
    *error = "short read";
    return "";
  }
  return sha256_hex(bytes);
}

// Union-find over indices, with path halving.
struct DuplicateSets {
  std::vector<std::int64_t> parent;
  explicit DuplicateSets(std::size_t n) : parent(n) {
    std::iota(parent.begin(), parent.end(), std::int64_t{0});
  }
  std::int64_t find(std::int64_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  }
  void join(std::int64_t a, std::int64_t b) {
    a = find(a);
    b = find(b);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);
  }
};

void join_exact_copies(const std::vector<ImageFingerprint>& prints, DuplicateSets& sets) {
  std::map<std::string, std::int64_t> first_with;
  for (std::size_t i = 0; i < prints.size(); ++i) {
    if (prints[i].sha256.empty()) continue;
    const auto [it, added] = first_with.emplace(prints[i].sha256, static_cast<std::int64_t>(i));
    if (!added) sets.join(it->second, static_cast<std::int64_t>(i));
  }
}

// Every pair of decoded images within `d` bits, compared directly (d >= 16, or few images).
void join_near_by_pairs(const std::vector<ImageFingerprint>& prints,
                        const std::vector<std::int64_t>& decoded, int d, DuplicateSets& sets) {
  for (std::size_t a = 0; a < decoded.size(); ++a) {
    for (std::size_t b = a + 1; b < decoded.size(); ++b) {
      if (phash_distance(prints[decoded[a]].phash, prints[decoded[b]].phash) <= d) {
        sets.join(decoded[a], decoded[b]);
      }
    }
  }
}

// The 16-bit masks of at most `radius` set bits.
std::vector<std::uint16_t> masks_within(int radius) {
  std::vector<std::uint16_t> masks;
  for (std::uint32_t m = 0; m <= 0xFFFF; ++m) {
    if (std::popcount(m) <= radius) masks.push_back(static_cast<std::uint16_t>(m));
  }
  return masks;
}

// Multi-index hashing: if two 64-bit hashes are within d bits, one of their four 16-bit blocks
// is within d/4 bits (pigeonhole), so each image is compared only with the images whose block
// lies within that radius of its own, looked up in one bucket table per block.
void join_near_by_blocks(const std::vector<ImageFingerprint>& prints,
                         const std::vector<std::int64_t>& decoded, int d, DuplicateSets& sets) {
  const std::vector<std::uint16_t> masks = masks_within(d / 4);
  for (int block = 0; block < 4; ++block) {
    const auto key = [&](std::int64_t i) {
      return static_cast<std::uint16_t>(prints[i].phash >> (16 * block));
    };
    std::vector<std::uint32_t> start(0x10001, 0);  // bucket table, counting sort by key
    for (const std::int64_t i : decoded) ++start[key(i) + 1];
    std::partial_sum(start.begin(), start.end(), start.begin());
    std::vector<std::int64_t> bucket(decoded.size());
    std::vector<std::uint32_t> fill(start.begin(), start.end() - 1);
    for (const std::int64_t i : decoded) bucket[fill[key(i)]++] = i;
    for (const std::int64_t i : decoded) {
      for (const std::uint16_t mask : masks) {
        const std::uint16_t k = key(i) ^ mask;
        for (std::uint32_t at = start[k]; at < start[k + 1]; ++at) {
          const std::int64_t j = bucket[at];
          if (j > i && phash_distance(prints[i].phash, prints[j].phash) <= d) sets.join(i, j);
        }
      }
    }
  }
}

DuplicateGroup group_of(const std::vector<ImageFingerprint>& prints,
                        std::vector<std::int64_t> members) {
  DuplicateGroup group;
  const ImageFingerprint& first = prints[members.front()];
  group.exact = std::all_of(members.begin(), members.end(), [&](std::int64_t i) {
    return !first.sha256.empty() && prints[i].sha256 == first.sha256;
  });
  for (const std::int64_t i : members) {
    if (!group.exact && first.decoded && prints[i].decoded) {
      group.max_distance =
          std::max(group.max_distance, phash_distance(first.phash, prints[i].phash));
    }
  }
  group.members = std::move(members);
  return group;
}

}  // namespace

int phash_distance(std::uint64_t a, std::uint64_t b) { return std::popcount(a ^ b); }

std::uint64_t phash_of_gray(const std::uint8_t* pixels, int rows, int cols) {
  if (rows <= 0 || cols <= 0) {
    throw std::invalid_argument("pHash of an empty image (" + std::to_string(cols) + "x" +
                                std::to_string(rows) + ")");
  }
  const cv::Mat gray(rows, cols, CV_8UC1, const_cast<std::uint8_t*>(pixels));
  cv::Mat small;
  cv::resize(gray, small, cv::Size(kPhashInput, kPhashInput), 0, 0, cv::INTER_AREA);
  cv::Mat values;
  small.convertTo(values, CV_64F);
  return phash_bits(values.ptr<double>());
}

ImageFingerprint fingerprint_image(const ImageInput& input, const ImageLimits& limits) {
  ImageFingerprint print;
  print.path = input.path;
  if (input.image) {
    const SampleImage& held = input.image;
    print.error = held_image_problem(held, limits);
    if (!print.error.empty()) return print;
    print.sha256 =
        sha256_hex(std::string(reinterpret_cast<const char*>(held.data()), held.bytes()));
  } else if (input.member) {
    print.sha256 = member_hash(input.member, &print.error);
  } else {
    print.sha256 = content_hash(input.path, &print.error);
  }
  if (print.sha256.empty()) return print;
  try {
    const DecodedImage decoded =
        decode_bgr(input, kPhashMinDecodeSide, {limits, nullptr}, &print.error);
    if (decoded.image.empty()) return print;
    print.phash = phash_of_bgr(decoded.image);
    print.decoded = true;
    print.error.clear();
  } catch (const SystemIoError&) {
    throw;
  } catch (const std::exception& e) {  // resource exhaustion (std::bad_alloc, cv::Exception)
    print.error = std::string("decode failed: ") + e.what();
  }
  return print;
}

std::vector<ImageFingerprint> fingerprint_images(const std::vector<ImageInput>& paths, int threads,
                                                 const FingerprintProgress& progress,
                                                 const ImageLimits& limits) {
  std::vector<ImageFingerprint> prints(paths.size());
  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  std::int64_t done = 0;
  std::exception_ptr error;
  const auto body = [&] {
    try {
      for (std::size_t i = next++; i < paths.size(); i = next++) {
        prints[i] = fingerprint_image(paths[i], limits);
        std::lock_guard lock(mutex);
        ++done;
        if (progress) progress(done, static_cast<std::int64_t>(paths.size()));
      }
    } catch (...) {  // the progress callback's, or std::bad_alloc: re-raised below
      std::lock_guard lock(mutex);
      if (!error) error = std::current_exception();
      next = paths.size();
    }
  };
  const int wanted = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  const int extra = std::min<int>(std::max(wanted, 1), static_cast<int>(paths.size())) - 1;
  std::vector<std::thread> pool;
  try {
    for (int t = 0; t < extra; ++t) pool.emplace_back(body);
  } catch (const std::system_error&) {  // fewer threads: the caller's does the rest
  }
  body();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  return prints;
}

std::vector<ImageFingerprint> fingerprint_images(const std::vector<std::string>& paths, int threads,
                                                 const FingerprintProgress& progress,
                                                 const ImageLimits& limits) {
  return fingerprint_images(std::vector<ImageInput>(paths.begin(), paths.end()), threads, progress,
                            limits);
}

std::vector<DuplicateGroup> find_duplicates(const std::vector<ImageFingerprint>& prints,
                                            int max_distance) {
  if (max_distance < 0 || max_distance > 64) {
    throw std::invalid_argument("duplicate distance must be 0-64 bits, got " +
                                std::to_string(max_distance));
  }
  DuplicateSets sets(prints.size());
  join_exact_copies(prints, sets);
  std::vector<std::int64_t> decoded;
  for (std::size_t i = 0; i < prints.size(); ++i) {
    if (prints[i].decoded) decoded.push_back(static_cast<std::int64_t>(i));
  }
  if (max_distance >= 16 || decoded.size() < 64) {
    join_near_by_pairs(prints, decoded, max_distance, sets);
  } else {
    join_near_by_blocks(prints, decoded, max_distance, sets);
  }
  std::map<std::int64_t, std::vector<std::int64_t>> by_root;
  for (std::size_t i = 0; i < prints.size(); ++i) {
    by_root[sets.find(static_cast<std::int64_t>(i))].push_back(static_cast<std::int64_t>(i));
  }
  std::vector<DuplicateGroup> groups;
  for (auto& [root, members] : by_root) {
    if (members.size() >= 2) groups.push_back(group_of(prints, std::move(members)));
  }
  return groups;  // roots are each group's smallest index: already sorted by first member
}

}  // namespace ltfit
