// Hostile image files for the tests, generated as bytes at run time (none are committed):
// small files whose headers claim huge images (decompression bombs), a Radiance HDR to be named
// .jpg, and a helper that runs a decode in a forked child under an address-space cap, so a
// regression fails a test instead of eating the machine's memory. Header-only (the test glob
// compiles *_test.cpp files only).
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <string>

namespace ltfit::testing {

inline std::string bytes_of(std::initializer_list<int> values) {
  std::string text;
  for (const int v : values) text.push_back(static_cast<char>(v));
  return text;
}

inline std::string be16(std::uint32_t v) { return bytes_of({int(v >> 8 & 0xFF), int(v & 0xFF)}); }
inline std::string be32(std::uint32_t v) { return be16(v >> 16) + be16(v & 0xFFFF); }
inline std::string le16(std::uint32_t v) { return bytes_of({int(v & 0xFF), int(v >> 8 & 0xFF)}); }
inline std::string le32(std::uint32_t v) { return le16(v & 0xFFFF) + le16(v >> 16); }

// A JPEG marker segment: FF, marker, length (including itself), body.
inline std::string jpeg_segment(int marker, const std::string& body) {
  return bytes_of({0xFF, marker}) + be16(static_cast<std::uint32_t>(body.size() + 2)) + body;
}

// SOI, a quantisation table, the frame header, DC (and AC) Huffman tables of one 1-bit code.
inline std::string jpeg_head(int sof_marker, int width, int height) {
  const std::string frame = bytes_of({8}) + be16(static_cast<std::uint32_t>(height)) +
                            be16(static_cast<std::uint32_t>(width)) +
                            bytes_of({3, 1, 0x22, 0, 2, 0x11, 0, 3, 0x11, 0});
  std::string one_code = bytes_of({1}) + std::string(15, '\0') + bytes_of({0});
  return bytes_of({0xFF, 0xD8}) + jpeg_segment(0xDB, std::string(1, '\0') + std::string(64, 1)) +
         jpeg_segment(sof_marker, frame) + jpeg_segment(0xC4, bytes_of({0x00}) + one_code) +
         jpeg_segment(0xC4, bytes_of({0x10}) + one_code);
}

// A progressive JPEG (SOF2, 3 components 4:2:0) of `width` x `height` with one DC scan of a few
// bytes: libjpeg allocates the whole coefficient buffer (~3 bytes per pixel) on start.
inline std::string progressive_jpeg(int width, int height) {
  return jpeg_head(0xC2, width, height) +
         jpeg_segment(0xDA, bytes_of({3, 1, 0x00, 2, 0x00, 3, 0x00, 0, 0, 0})) +
         std::string(16, '\0') + bytes_of({0xFF, 0xD9});
}

// A baseline JPEG (SOF0) claiming `width` x `height`, one interleaved scan, EOI: before the
// header check, libjpeg decoded it at 1/8 scale as a grey image.
inline std::string baseline_jpeg(int width, int height) {
  return jpeg_head(0xC0, width, height) +
         jpeg_segment(0xDA, bytes_of({3, 1, 0x00, 2, 0x00, 3, 0x00, 0, 63, 0})) +
         std::string(16, '\0') + bytes_of({0xFF, 0xD9});
}

inline std::uint32_t crc32_of(const std::string& data) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (const char ch : data) {
    crc ^= static_cast<std::uint8_t>(ch);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

inline std::string png_chunk(const std::string& type, const std::string& data) {
  return be32(static_cast<std::uint32_t>(data.size())) + type + data + be32(crc32_of(type + data));
}

// An 8-bit RGB PNG claiming `width` x `height`, with one tiny (empty) zlib stream.
inline std::string png_claiming(std::uint32_t width, std::uint32_t height) {
  return bytes_of({0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A}) +
         png_chunk("IHDR", be32(width) + be32(height) + bytes_of({8, 2, 0, 0, 0})) +
         png_chunk("IDAT", bytes_of({0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})) +
         png_chunk("IEND", "");
}

inline std::string tiff_entry(int tag, int type, std::uint32_t count, std::uint32_t value) {
  const std::string field = type == 3 && count == 1 ? le16(value) + le16(0) : le32(value);
  return le16(static_cast<std::uint32_t>(tag)) + le16(static_cast<std::uint32_t>(type)) +
         le32(count) + field;
}

// An uncompressed 8-bit RGB TIFF (one strip) claiming `width` x `height`, 16 data bytes.
inline std::string tiff_claiming(std::uint32_t width, std::uint32_t height) {
  const std::uint32_t bits_at = 8 + 2 + 10 * 12 + 4, data_at = bits_at + 6;
  std::string ifd = le16(10) + tiff_entry(256, 4, 1, width) + tiff_entry(257, 4, 1, height) +
                    tiff_entry(258, 3, 3, bits_at) + tiff_entry(259, 3, 1, 1) +
                    tiff_entry(262, 3, 1, 2) + tiff_entry(273, 4, 1, data_at) +
                    tiff_entry(277, 3, 1, 3) + tiff_entry(278, 4, 1, height) +
                    tiff_entry(279, 4, 1, 16) + tiff_entry(284, 3, 1, 1) + le32(0);
  return bytes_of({'I', 'I', 0x2A, 0}) + le32(8) + ifd + le16(8) + le16(8) + le16(8) +
         std::string(16, '\x40');
}

// A Radiance RGBE file claiming `width` x `height` (named .jpg by the tests).
inline std::string hdr_claiming(int width, int height) {
  return "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y " + std::to_string(height) + " +X " +
         std::to_string(width) + "\n" + std::string(64, '\x01');
}

// A lossless WebP (VP8L) claiming `width` x `height` (each at most 16384).
inline std::string webp_claiming(int width, int height) {
  const std::uint32_t bits =
      static_cast<std::uint32_t>(width - 1) | static_cast<std::uint32_t>(height - 1) << 14;
  const std::string bitstream = bytes_of({0x2F}) + le32(bits) + std::string(11, '\0');
  const std::string chunk = "VP8L" + le32(static_cast<std::uint32_t>(bitstream.size())) + bitstream;
  return "RIFF" + le32(static_cast<std::uint32_t>(4 + chunk.size())) + "WEBP" + chunk;
}

// A /proc/self/status field in kB ("VmSize", "VmRSS").
inline std::int64_t proc_status_kb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string key;
  std::int64_t value = 0;
  while (in >> key) {
    if (key == field + ":") {
      in >> value;
      return value;
    }
    in.ignore(1 << 12, '\n');
  }
  return 0;
}

// ThreadSanitizer maps memory for every new thread and aborts when RLIMIT_AS refuses it: under
// TSan run_capped runs uncapped (the checks on what the code did still hold). ASan reserves its
// shadow at start-up, before the cap, and works under it.
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kAddressSpaceCapped = false;
#else
inline constexpr bool kAddressSpaceCapped = true;
#endif

// A thread refused by RLIMIT_AS: in a plain build pthread_create fails with EAGAIN (its stack
// mmap is refused) and std::thread throws. Under ASan the new thread may start and then die in
// ASan's own per-thread mmap (its alternate signal stack: "AddressSanitizer failed to allocate
// ... SetAlternateSignalStack"), which no code of ours can catch. Tests of a refused thread run
// only where the refusal reaches our code.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadRefusalReachesCode = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kThreadRefusalReachesCode = false;
#else
inline constexpr bool kThreadRefusalReachesCode = true;
#endif
#else
inline constexpr bool kThreadRefusalReachesCode = true;
#endif

// The result of `body` run in a forked child under RLIMIT_AS = its size at the fork + headroom.
struct CappedBody {
  bool exited = false;                  // the child finished (no crash, no timeout)
  std::string output;                   // what `body` returned
  std::int64_t peak_rss_growth_kb = 0;  // the child's peak RSS minus the parent's RSS at the fork
};

inline CappedBody run_capped(const std::function<std::string()>& body, std::uint64_t headroom_bytes,
                             int timeout_seconds = 60) {
  std::array<int, 2> fds{};
  if (::pipe(fds.data()) != 0) return {};
  const std::int64_t rss_before = proc_status_kb("VmRSS");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const auto size = static_cast<rlim_t>(proc_status_kb("VmSize")) * 1024 + headroom_bytes;
    const rlimit limit{size, size};
    std::string out =
        !kAddressSpaceCapped || ::setrlimit(RLIMIT_AS, &limit) == 0 ? "" : "setrlimit failed";
    try {
      if (out.empty()) out = body();
    } catch (const std::exception& e) {
      out = std::string("exception: ") + e.what();
    }
    for (std::size_t done = 0; done < out.size();) {
      const ssize_t n = ::write(fds[1], out.data() + done, out.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  CappedBody run;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
      ::kill(pid, SIGKILL);  // hung: the test fails instead of waiting forever
      break;
    }
    char buffer[4096];
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n <= 0) break;
    run.output.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  rusage usage{};
  ::wait4(pid, &status, 0, &usage);
  run.exited = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  run.peak_rss_growth_kb = usage.ru_maxrss - rss_before;
  return run;
}

}  // namespace ltfit::testing
