// Exact and near-duplicate images: a content hash and a perceptual hash per file, and the groups
// of files whose hashes say they show the same picture.
//
// The perceptual hash is the DCT hash (pHash) as the Python `imagehash.phash` computes it: the
// image (EXIF orientation applied) to 8-bit grey (ITU-R 601 luma, as Pillow's convert("L")),
// resized to 32x32 with OpenCV's area filter (Pillow's antialiased Lanczos in imagehash, so a
// few bits may differ between the two), an unnormalised 2-D DCT-II, its 8x8 lowest frequencies
// (DC included), and one bit per coefficient: set when it is above their median. Bit 63 is
// coefficient (0,0), then row by row to bit 0 = (7,7), so "%016x" prints imagehash's hex string.
// Re-encoding, rescaling and small crops change a few bits; different pictures differ in about
// half. Decoding goes through the project's bounded decoder (header checked against the pixel
// limit before anything is allocated, memory held from the shared decode budget), so a hostile
// file costs no more than any image. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ltfit/data/image_header.h"
#include "ltfit/data/sample.h"

namespace ltfit {

// The Hamming distance within which two pHashes are called near duplicates by default: the
// planted copies of tests/data/duplicates_test.cpp (re-encoded, resized 0.5x-1.5x, cropped 3%)
// stay within it while distinct images almost never come that close (docs/clean.md).
inline constexpr int kDefaultDuplicateDistance = 8;

struct ImageFingerprint {
  std::string path;
  std::string sha256;       // of the file's bytes (a held image's: its pixels), lower-case hex;
                            // "" when the file cannot be read
  std::uint64_t phash = 0;  // valid only when decoded
  bool decoded = false;
  std::string error;  // why not decoded (or not hashed); "" when decoded
};

// The fingerprint of one file; never throws for a bad file (decoded = false, error says why);
// throws a RuntimeError (exit 5) when the system keeps failing to open or read it (image_io.h).
// `limits` are what the file must pass before it is decoded (data.max_pixels, data.formats).
ImageFingerprint fingerprint_image(const ImageInput& input, const ImageLimits& limits = {});

// Called with the number of files done so far and the total, from any worker thread, one call
// at a time.
using FingerprintProgress = std::function<void(std::int64_t done, std::int64_t total)>;

// Fingerprints `paths` on `threads` workers (0: the hardware's concurrency), in input order.
std::vector<ImageFingerprint> fingerprint_images(const std::vector<ImageInput>& inputs,
                                                 int threads = 0,
                                                 const FingerprintProgress& progress = {},
                                                 const ImageLimits& limits = {});
// The same over files named by their paths.
std::vector<ImageFingerprint> fingerprint_images(const std::vector<std::string>& paths,
                                                 int threads = 0,
                                                 const FingerprintProgress& progress = {},
                                                 const ImageLimits& limits = {});

struct DuplicateGroup {
  std::vector<std::int64_t> members;  // indices into the input, ascending
  bool exact = false;                 // every member has the same sha256
  int max_distance = 0;  // largest pHash Hamming distance to the first member (0 when exact)
};

// Groups of two or more images: the same sha256 (exact), or decoded images within
// `max_distance` (0-64) bits of pHash Hamming distance, joined transitively (union-find), so a
// chain a~b~c is one group even when a and c are further apart (max_distance then shows it).
// Sorted by first member. Undecoded files join only their exact copies. Pairs are found by
// multi-index hashing on four 16-bit blocks (a pair within d bits has a block within d/4), so
// the work grows with the candidates, not N^2, for d < 16; by comparing every pair above.
// Throws std::invalid_argument for max_distance outside 0-64.
std::vector<DuplicateGroup> find_duplicates(const std::vector<ImageFingerprint>& prints,
                                            int max_distance = kDefaultDuplicateDistance);

// The Hamming distance of two pHashes (0-64).
int phash_distance(std::uint64_t a, std::uint64_t b);

// The pHash of an 8-bit grey image given as rows x cols bytes, row-major (for tests and tools).
// std::invalid_argument when rows or cols is not positive.
std::uint64_t phash_of_gray(const std::uint8_t* pixels, int rows, int cols);

}  // namespace ltfit
